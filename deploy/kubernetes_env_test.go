package deploy_test

import (
	"github.com/agentfix/agentfix/config"
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestSecretsAndConfigMapReferences(t *testing.T) {
	c := loadCluster(t)
	tmpl := loadSecretTemplate(t)
	if tmpl.Name != secretName {
		t.Errorf("secret.example.yaml: name %q, want %q", tmpl.Name, secretName)
	}
	if len(tmpl.Data) > 0 {
		t.Errorf("secret.example.yaml: has data; want placeholders in stringData only")
	}
	for k, v := range tmpl.StringData {
		if v != placeholder {
			t.Errorf("secret.example.yaml %s: got %q, want the placeholder %q, never a value", k, v, placeholder)
		}
	}

	used := map[string]bool{}
	keyFile := c.configMaps[configMapName].Data["AGENTFIX_PRIVATE_KEY_FILE"]
	for _, name := range []string{webhookName, workerName} {
		spec := c.deployments[name].Spec.Template.Spec
		ctr := onlyContainer(t, spec)
		for _, ef := range ctr.EnvFrom {
			if ef.ConfigMapRef == nil || c.configMaps[ef.ConfigMapRef.Name] == nil {
				t.Errorf("%s envFrom %+v: want a ConfigMap of the kustomization", name, ef)
			}
		}
		for _, e := range ctr.Env {
			ref := e.ValueFrom
			if ref == nil || ref.SecretKeyRef == nil {
				continue
			}
			sk := ref.SecretKeyRef
			used[sk.Key] = true
			if sk.Name != secretName {
				t.Errorf("%s %s: Secret %q, want %q", name, e.Name, sk.Name, secretName)
			}
			if _, ok := tmpl.StringData[sk.Key]; !ok {
				t.Errorf("%s %s: key %q is not in secret.example.yaml", name, e.Name, sk.Key)
			}
			required := sk.Optional == nil || !*sk.Optional
			if wantRequired := e.Name == "AGENTFIX_WEBHOOK_SECRET" || e.Name == "REDIS_PASSWORD"; required != wantRequired {
				t.Errorf("%s %s: required %t, want %t", name, e.Name, required, wantRequired)
			}
		}
		// The private key is a file from the Secret, at the path the
		// ConfigMap names.
		var mounted []string
		for _, vm := range ctr.VolumeMounts {
			for _, v := range spec.Volumes {
				if v.Name != vm.Name || v.Secret == nil {
					continue
				}
				if v.Secret.SecretName != secretName {
					t.Errorf("%s volume %s: Secret %q, want %q", name, v.Name, v.Secret.SecretName, secretName)
				}
				if !vm.ReadOnly {
					t.Errorf("%s volume %s: mount it read-only", name, v.Name)
				}
				for _, it := range v.Secret.Items {
					used[it.Key] = true
					if _, ok := tmpl.StringData[it.Key]; !ok {
						t.Errorf("%s volume %s: key %q is not in secret.example.yaml", name, v.Name, it.Key)
					}
					mounted = append(mounted, path.Join(vm.MountPath, it.Path))
				}
			}
		}
		if diff := cmp.Diff([]string{keyFile}, mounted); diff != "" {
			t.Errorf("%s: Secret files mounted (-AGENTFIX_PRIVATE_KEY_FILE +got):\n%s", name, diff)
		}
	}
	for k := range tmpl.StringData {
		if !used[k] {
			t.Errorf("secret.example.yaml key %q is read by no container", k)
		}
	}
}

func TestKubernetesEnvIsAValidConfig(t *testing.T) {
	c := loadCluster(t)
	tmpl := loadSecretTemplate(t)
	for _, name := range []string{webhookName, workerName} {
		t.Run(name, func(t *testing.T) {
			spec := c.deployments[name].Spec.Template.Spec
			if spec.EnableServiceLinks == nil || *spec.EnableServiceLinks {
				// Kubernetes would inject AGENTFIX_REDIS_PORT and the like
				// for the agentfix-* Services, which the bot warns about.
				t.Errorf("enableServiceLinks: want false")
			}
			ctr := onlyContainer(t, spec)
			env := containerEnv(t, c, tmpl, ctr)
			// A variable that only feeds $(NAME) of another (REDIS_PASSWORD
			// into AGENTFIX_REDIS_URL) is no setting of its own.
			for _, e := range ctr.Env {
				for _, ref := range envRef.FindAllString(e.Value, -1) {
					if name := ref[2 : len(ref)-1]; !strings.HasPrefix(name, config.EnvPrefix) {
						delete(env, name)
					}
				}
			}
			checkConfig(t, env)
		})
	}
}

// envRef is a Kubernetes $(NAME) reference in an env value or an argument.
var envRef = regexp.MustCompile(`\$\([A-Za-z_][A-Za-z0-9_]*\)`)

// containerEnv returns the environment ctr gets: its ConfigMaps, then its
// env entries, with Secret values taken from the template.
func containerEnv(t *testing.T, c *cluster, tmpl *corev1.Secret, ctr corev1.Container) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, ef := range ctr.EnvFrom {
		if ef.ConfigMapRef != nil {
			for k, v := range c.configMaps[ef.ConfigMapRef.Name].Data {
				env[k] = v
			}
		}
	}
	for _, e := range ctr.Env {
		switch {
		case e.ValueFrom == nil:
			// Kubernetes puts in $(NAME) of the variables defined before.
			env[e.Name] = envRef.ReplaceAllStringFunc(e.Value, func(ref string) string {
				if v, ok := env[ref[2:len(ref)-1]]; ok {
					return v
				}
				return ref
			})
		case e.ValueFrom.SecretKeyRef != nil:
			env[e.Name] = tmpl.StringData[e.ValueFrom.SecretKeyRef.Key]
		default:
			t.Fatalf("env %s: only values and secretKeyRefs are expected", e.Name)
		}
	}
	return env
}
