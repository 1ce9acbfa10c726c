package deploy_test

import (
	"bytes"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/joho/godotenv"
	"go.yaml.in/yaml/v3"
)

// composeFile is the part of the Compose specification the compose file
// uses; decoding is strict, so anything else in the file fails the tests.
type composeFile struct {
	Name     string                    `yaml:"name"`
	XBot     yaml.Node                 `yaml:"x-bot"`
	Services map[string]composeService `yaml:"services"`
	Secrets  map[string]struct {
		File string `yaml:"file"`
	} `yaml:"secrets"`
	Volumes map[string]struct{} `yaml:"volumes"`
}

type composeService struct {
	Build *struct {
		Context    string `yaml:"context"`
		Dockerfile string `yaml:"dockerfile"`
	} `yaml:"build"`
	Image       string            `yaml:"image"`
	Restart     string            `yaml:"restart"`
	Command     []string          `yaml:"command"`
	EnvFile     string            `yaml:"env_file"`
	Environment map[string]string `yaml:"environment"`
	Secrets     []string          `yaml:"secrets"`
	DependsOn   map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Ports           []string `yaml:"ports"`
	Volumes         []string `yaml:"volumes"`
	Tmpfs           []string `yaml:"tmpfs"`
	Devices         []string `yaml:"devices"`
	ReadOnly        bool     `yaml:"read_only"`
	Init            bool     `yaml:"init"`
	CapDrop         []string `yaml:"cap_drop"`
	SecurityOpt     []string `yaml:"security_opt"`
	ContainerName   string   `yaml:"container_name"`
	StopGracePeriod string   `yaml:"stop_grace_period"`
	Healthcheck     *struct {
		Test        []string `yaml:"test"`
		Interval    string   `yaml:"interval"`
		Timeout     string   `yaml:"timeout"`
		StartPeriod string   `yaml:"start_period"`
		Retries     int      `yaml:"retries"`
	} `yaml:"healthcheck"`
}

func loadCompose(t *testing.T) composeFile {
	t.Helper()
	b, err := os.ReadFile("docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	b = interpolateCompose(t, b)
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var f composeFile
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return f
}

// composeVar is a variable docker compose interpolates; the file may only
// require one (${NAME:?message}), never fall back to a default.
var composeVar = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)([^}]*)\}`)

// interpolateCompose puts the test's stand-in values in for the variables
// of a compose file as docker compose does with the shell's or .env's.
func interpolateCompose(t *testing.T, b []byte) []byte {
	t.Helper()
	return composeVar.ReplaceAllFunc(b, func(ref []byte) []byte {
		m := composeVar.FindSubmatch(ref)
		v, ok := testValues[string(m[1])]
		if !ok || !strings.HasPrefix(string(m[2]), ":?") {
			t.Errorf("docker-compose.yml %s: want a required variable with a stand-in in testValues", ref)
		}
		return []byte(v)
	})
}

func TestComposeServices(t *testing.T) {
	f := loadCompose(t)
	if diff := cmp.Diff([]string{"redis", "webhook", "worker"}, sortedKeys(f.Services)); diff != "" {
		t.Fatalf("services (-want +got):\n%s", diff)
	}
	for _, name := range []string{"webhook", "worker"} {
		t.Run(name, func(t *testing.T) {
			s := f.Services[name]
			if diff := cmp.Diff([]string{name}, s.Command); diff != "" {
				t.Errorf("command (-want +got):\n%s", diff)
			}
			if s.Build == nil || s.Build.Context != ".." || s.Build.Dockerfile != "deploy/Dockerfile" {
				t.Errorf("build %+v: want context .. and deploy/Dockerfile", s.Build)
			}
			if got := s.DependsOn["redis"].Condition; got != "service_healthy" {
				t.Errorf("depends_on redis: condition %q, want service_healthy", got)
			}
			hc := s.Healthcheck
			if hc == nil || !cmp.Equal(hc.Test, []string{"CMD", "agentfix-healthcheck", "/readyz"}) {
				t.Errorf("healthcheck %+v: want the image's agentfix-healthcheck on /readyz", hc)
			}
			if !slices.Contains(s.SecurityOpt, "no-new-privileges:true") || !cmp.Equal(s.CapDrop, []string{"ALL"}) {
				t.Errorf("security_opt %q, cap_drop %q: want no-new-privileges:true and drop ALL", s.SecurityOpt, s.CapDrop)
			}
			for _, sec := range s.Secrets {
				if _, ok := f.Secrets[sec]; !ok {
					t.Errorf("secret %s is not declared", sec)
				}
			}
			for _, v := range s.Volumes {
				if vol, _, _ := strings.Cut(v, ":"); !strings.HasPrefix(vol, ".") && !strings.HasPrefix(vol, "/") {
					if _, ok := f.Volumes[vol]; !ok {
						t.Errorf("volume %s is not declared", vol)
					}
				}
			}
		})
	}

	redis := f.Services["redis"]
	if pw, _ := flagValue(redis.Command, "--requirepass"); pw != testValues["REDIS_PASSWORD"] || redis.Environment["REDISCLI_AUTH"] != pw {
		t.Errorf("redis --requirepass %q, REDISCLI_AUTH %q: want both REDIS_PASSWORD", pw, redis.Environment["REDISCLI_AUTH"])
	}
	if hc := redis.Healthcheck; hc == nil || !cmp.Equal(hc.Test, []string{"CMD", "redis-cli", "ping"}) {
		t.Errorf("redis healthcheck %+v: want redis-cli ping", hc)
	}
	if len(redis.Command) == 0 || redis.Command[0] != "redis-server" {
		t.Errorf("redis command %q: want redis-server and its flags", redis.Command)
	}
	if !slices.ContainsFunc(redis.Volumes, func(v string) bool { return strings.HasSuffix(v, ":/data") }) {
		t.Errorf("redis volumes %q: want a volume on /data for the append-only file", redis.Volumes)
	}
}

// TestComposeWorker checks what bwrap needs in the worker's container, the
// grace period, and that the worker can be scaled.
func TestComposeWorker(t *testing.T) {
	f := loadCompose(t)
	w := f.Services["worker"]
	for _, want := range []string{"seccomp=unconfined", "apparmor=unconfined", "systempaths=unconfined"} {
		if !slices.Contains(w.SecurityOpt, want) {
			t.Errorf("worker security_opt %q: no %s", w.SecurityOpt, want)
		}
	}
	if !w.Init {
		t.Errorf("worker init: want true (an init reaps orphaned sandbox processes)")
	}
	grace, err := time.ParseDuration(w.StopGracePeriod)
	if err != nil || grace < workerWrapUp {
		t.Errorf("worker stop_grace_period %q: want at least %s (the worker's wrap-up)", w.StopGracePeriod, workerWrapUp)
	}
	if len(w.Ports) > 0 || w.ContainerName != "" {
		t.Errorf("worker publishes ports %q or names its container %q: `--scale worker=N` needs neither", w.Ports, w.ContainerName)
	}
	if !slices.ContainsFunc(w.Volumes, func(v string) bool { return strings.HasSuffix(v, ":"+w.Environment["AGENTFIX_DATA_DIR"]) }) {
		t.Errorf("worker volumes %q: want a volume on AGENTFIX_DATA_DIR %s", w.Volumes, w.Environment["AGENTFIX_DATA_DIR"])
	}

	// Setup's network needs the tun device in the worker, and only there.
	if !slices.Contains(w.Devices, "/dev/net/tun:/dev/net/tun") {
		t.Errorf("worker devices %q: want /dev/net/tun for slirp4netns", w.Devices)
	}
	for _, name := range []string{"webhook", "redis"} {
		if len(f.Services[name].Devices) > 0 {
			t.Errorf("%s devices %q: only the worker needs one", name, f.Services[name].Devices)
		}
	}

	// Only the worker loosens the sandbox-related options.
	for _, name := range []string{"webhook", "redis"} {
		for _, opt := range f.Services[name].SecurityOpt {
			if strings.Contains(opt, "unconfined") {
				t.Errorf("%s security_opt %s: only the worker needs it", name, opt)
			}
		}
	}
}

func TestComposeEnvIsAValidConfig(t *testing.T) {
	f := loadCompose(t)
	example, err := godotenv.Read(".env.example")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"webhook", "worker"} {
		t.Run(name, func(t *testing.T) {
			s := f.Services[name]
			if s.EnvFile != ".env" {
				t.Fatalf("env_file %q: want .env (from .env.example)", s.EnvFile)
			}
			env := map[string]string{}
			for k, v := range example {
				env[k] = v
			}
			for k, v := range s.Environment {
				env[k] = v
			}
			if got, want := env["AGENTFIX_PRIVATE_KEY_FILE"], "/run/secrets/"+s.Secrets[0]; len(s.Secrets) != 1 || got != want {
				t.Errorf("AGENTFIX_PRIVATE_KEY_FILE %q with secrets %q: want %s", got, s.Secrets, want)
			}
			if want := "redis://:" + testValues["REDIS_PASSWORD"] + "@redis:6379/0"; env["AGENTFIX_REDIS_URL"] != want {
				t.Errorf("AGENTFIX_REDIS_URL %q: want %s, the redis service with REDIS_PASSWORD", env["AGENTFIX_REDIS_URL"], want)
			}
			checkConfig(t, env)
		})
	}
}
