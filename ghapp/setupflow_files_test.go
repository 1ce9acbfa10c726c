package ghapp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestUpdateDotEnv(t *testing.T) {
	vars := []envVar{{"AGENTFIX_APP_ID", "42"}, {"AGENTFIX_PRIVATE_KEY_FILE", "my app.pem"}, {"AGENTFIX_WEBHOOK_SECRET", "s3cr3t"}}
	const block = "# setup\nAGENTFIX_APP_ID=42\nAGENTFIX_PRIVATE_KEY_FILE='my app.pem'\nAGENTFIX_WEBHOOK_SECRET=s3cr3t\n"
	tests := []struct {
		name    string
		old     *string // nil: no file
		want    string
		wantErr string
	}{
		{name: "no file", want: block},
		{name: "empty file", old: ptr(""), want: block},
		{name: "lines kept, no final newline", old: ptr("# mine\nAGENTFIX_MODEL=openai/gpt-5"), want: "# mine\nAGENTFIX_MODEL=openai/gpt-5\n\n" + block},
		{name: "old assignments dropped", old: ptr("AGENTFIX_APP_ID=\nexport AGENTFIX_WEBHOOK_SECRET = old\n  AGENTFIX_PRIVATE_KEY_FILE: k.pem\nX=1\n"), want: "X=1\n\n" + block},
		{name: "windows line ends kept", old: ptr("A=1\r\nB=2\r\n"), want: "A=1\r\nB=2\r\n\n" + block},
		{name: "multi-line value kept", old: ptr("CERT=\"line one\nline two\"\n"), want: "CERT=\"line one\nline two\"\n\n" + block},
		{name: "a line inside another value looks like ours", old: ptr("NOTE=\"see\nAGENTFIX_APP_ID=1\n\"\n"), wantErr: "merging would change NOTE"},
		{name: "malformed file", old: ptr("A=\"open\n"), wantErr: "parse"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), ".env")
			if tt.old != nil {
				if err := os.WriteFile(path, []byte(*tt.old), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			err := updateDotEnv(path, vars, "setup")
			got, _ := os.ReadFile(path)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("updateDotEnv = %v, want %q", err, tt.wantErr)
				}
				if string(got) != *tt.old {
					t.Errorf("the file changed after a refusal:\n%s", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf(".env (-want +got):\n%s", diff)
			}
			if info, _ := os.Stat(path); info.Mode().Perm() != 0o600 {
				t.Errorf("mode = %v, want 0600", info.Mode().Perm())
			}
			if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*.tmp")); len(left) != 0 {
				t.Errorf("temporary files left: %v", left)
			}
		})
	}
}

func TestEnvLineRefusesQuotes(t *testing.T) {
	if _, err := envLine(envVar{"K", "it's"}); err == nil {
		t.Error("envLine with a single quote = nil error, want a refusal")
	}
	if _, err := envLine(envVar{"K", "a\nb"}); err == nil {
		t.Error("envLine with a line break = nil error, want a refusal")
	}
}

func TestKeyFileBase(t *testing.T) {
	for in, want := range map[string]string{"agentfix-test": "agentfix-test", "My App!": "myapp", "../..": "github-app", "-x-": "x"} {
		if got := keyFileBase(in); got != want {
			t.Errorf("keyFileBase(%q) = %q, want %q", in, got, want)
		}
	}
}

func ptr(s string) *string { return &s }
