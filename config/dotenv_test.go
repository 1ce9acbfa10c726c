package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/joho/godotenv"
)

func TestParseDotEnv(t *testing.T) {
	v := func(line int, key, value string) dotEnvVar { return dotEnvVar{key: key, value: value, line: line} }
	tests := []struct {
		name string
		in   string
		want []dotEnvVar
	}{
		{"empty", "", nil},
		{"comments and blank lines", "# a comment\n\n   \n  # indented\n", nil},
		{"plain", "A=1\nB=two words\n", []dotEnvVar{v(1, "A", "1"), v(2, "B", "two words")}},
		{"spaces around", "  A =  x  \n", []dotEnvVar{v(1, "A", "x")}},
		{"empty value", "A=\nB=   \n", []dotEnvVar{v(1, "A", ""), v(2, "B", "")}},
		{"comment after a space", "A=x # the x\nB=y\t# the y\n", []dotEnvVar{v(1, "A", "x"), v(2, "B", "y")}},
		{"hash inside a value", "A=a#b\nB=#b\n", []dotEnvVar{v(1, "A", "a#b"), v(2, "B", "#b")}},
		{"equals signs in the value", "A=x==\nB=k=v\n", []dotEnvVar{v(1, "A", "x=="), v(2, "B", "k=v")}},
		{"export", "export A=1\nexport\tB=2\n", []dotEnvVar{v(1, "A", "1"), v(2, "B", "2")}},
		{"a variable named export", "export=1\n", []dotEnvVar{v(1, "export", "1")}},
		{"colon", "A: 1\n", []dotEnvVar{v(1, "A", "1")}},
		{"url", "A=https://x.example/a?b=c#d\n", []dotEnvVar{v(1, "A", "https://x.example/a?b=c#d")}},
		{"single quotes as written", `A='$B \n "x" # y'` + "\n", []dotEnvVar{v(1, "A", `$B \n "x" # y`)}},
		{"double quotes with escapes", `A="a\nb\"c\\d\$e"` + "\n", []dotEnvVar{v(1, "A", "a\nb\"c\\d$e")}},
		{"comment after a quoted value", "A='x' # c\nB=\"y\"\n", []dotEnvVar{v(1, "A", "x"), v(2, "B", "y")}},
		{"no expansion", "A=1\nB=${A}$A\n", []dotEnvVar{v(1, "A", "1"), v(2, "B", "${A}$A")}},
		{
			"a value over several lines, and the lines after it",
			"A=\"-----BEGIN-----\nMIIE\n-----END-----\"\nB=2\n",
			[]dotEnvVar{v(1, "A", "-----BEGIN-----\nMIIE\n-----END-----"), v(4, "B", "2")},
		},
		{"CRLF", "A=1\r\nB='2'\r\n", []dotEnvVar{v(1, "A", "1"), v(2, "B", "2")}},
		{"no final line feed", "A=1\nB=2", []dotEnvVar{v(1, "A", "1"), v(2, "B", "2")}},
		{"a later assignment is kept too", "A=1\nA=2\n", []dotEnvVar{v(1, "A", "1"), v(2, "A", "2")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, problems := parseDotEnv(".env", []byte(tt.in))
			if len(problems) > 0 {
				t.Fatalf("parseDotEnv(%q) problems: %v", tt.in, problems)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(dotEnvVar{})); diff != "" {
				t.Errorf("parseDotEnv(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestParseDotEnvProblems(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
		kept []string // keys still read
	}{
		{"no =", "A=1\nB\n", []string{".env:2: expected KEY=value; the line has no ="}, []string{"A"}},
		{"bad name", "A-B=1\n", []string{".env:1: expected KEY=value, with KEY made of letters, digits and _"}, nil},
		{"empty name", "=1\n", []string{".env:1: expected KEY=value, with KEY made of letters, digits and _"}, nil},
		{"after the closing quote", "A='x'y\nB=2\n", []string{".env:1: A: the value goes on after its closing quote; quote all of it"}, []string{"B"}},
		{
			"a quote never closed skips to the next assignment",
			"A=1\nB=\"abc\ndef/ghi+\nC=3\n",
			[]string{`.env:2: B: the value opens with " but never closes it`},
			[]string{"A", "C"},
		},
		{
			"every line",
			"A\nB=1\nC\n-D=2\n",
			[]string{".env:1: expected KEY=value; the line has no =", ".env:3: expected KEY=value; the line has no =", ".env:4: expected KEY=value, with KEY made of letters, digits and _"},
			[]string{"B"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vars, problems := parseDotEnv(".env", []byte(tt.in))
			var got, kept []string
			for _, p := range problems {
				got = append(got, p.Error())
			}
			for _, v := range vars {
				kept = append(kept, v.key)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.kept, kept); diff != "" {
				t.Errorf("keys read (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDotEnvAgreesWithGodotenv checks that the files /setup writes and
// checks with godotenv (ghapp) read the same here, as do the other common
// forms (expansion aside).
func TestDotEnvAgreesWithGodotenv(t *testing.T) {
	files := []string{
		"# Written by /setup\nAGENTFIX_APP_ID=12345\nAGENTFIX_WEBHOOK_SECRET='a b%c!d'\nAGENTFIX_PRIVATE_KEY_FILE=/srv/bot/agentfix.private-key.pem\n",
		"AGENTFIX_PUBLIC_URL=https://bot.example.com\nAGENTFIX_ADMIN_TOKEN=abc+/=:@-._\n",
		"export OPENAI_API_KEY=sk-test\nAGENTFIX_MODEL = openai/gpt-5 # the model\n",
		"AGENTFIX_PRIVATE_KEY=\"-----BEGIN RSA PRIVATE KEY-----\\nMIIE\\n-----END RSA PRIVATE KEY-----\\n\"\n",
		"AGENTFIX_PRIVATE_KEY=\"-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\"\nAGENTFIX_APP_ID=1\n",
		"A=1\r\nB='two'\r\n",
		"A=\nB=x\n",
	}
	for _, f := range files {
		want, err := godotenv.Unmarshal(f)
		if err != nil {
			t.Fatalf("godotenv.Unmarshal(%q): %v", f, err)
		}
		vars, problems := parseDotEnv(".env", []byte(f))
		if len(problems) > 0 {
			t.Errorf("parseDotEnv(%q) problems: %v", f, problems)
		}
		got := map[string]string{}
		for _, v := range vars {
			got[v.key] = v.value
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("parseDotEnv(%q) differs from godotenv (-godotenv +here):\n%s", f, diff)
		}
	}
}
