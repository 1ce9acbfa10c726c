package deploy_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

const kubeDir = "kubernetes"

// Names the manifests give their objects; the tests look them up by these.
const (
	webhookName   = "agentfix-webhook"
	workerName    = "agentfix-worker"
	redisName     = "agentfix-redis"
	configMapName = "agentfix-config"
	secretName    = "agentfix-secrets"
)

// kustomization is the part of kustomization.yaml the tests read; decoding
// is strict, so a field kustomize would see but the tests do not fails.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
	Images     []struct {
		Name    string `json:"name"`
		NewName string `json:"newName"`
		NewTag  string `json:"newTag"`
	} `json:"images"`
}

// cluster is every object of the default kustomization, by name, decoded
// into the real API types.
type cluster struct {
	deployments  map[string]*appsv1.Deployment
	statefulSets map[string]*appsv1.StatefulSet
	services     map[string]*corev1.Service
	configMaps   map[string]*corev1.ConfigMap
	pdbs         map[string]*policyv1.PodDisruptionBudget
}

// workload is a Deployment or StatefulSet, as far as the tests look.
type workload struct {
	kind     string
	name     string
	selector map[string]string
	template *corev1.PodTemplateSpec
}

func (c *cluster) workloads() []workload {
	var out []workload
	for name, d := range c.deployments {
		out = append(out, workload{"Deployment", name, d.Spec.Selector.MatchLabels, &d.Spec.Template})
	}
	for name, s := range c.statefulSets {
		out = append(out, workload{"StatefulSet", name, s.Spec.Selector.MatchLabels, &s.Spec.Template})
	}
	return out
}

func readKustomization(t *testing.T) kustomization {
	t.Helper()
	var k kustomization
	decodeFile(t, filepath.Join(kubeDir, "kustomization.yaml"), &k)
	return k
}

// loadCluster decodes every resource kustomization.yaml lists.
func loadCluster(t *testing.T) *cluster {
	t.Helper()
	c := &cluster{
		deployments:  map[string]*appsv1.Deployment{},
		statefulSets: map[string]*appsv1.StatefulSet{},
		services:     map[string]*corev1.Service{},
		configMaps:   map[string]*corev1.ConfigMap{},
		pdbs:         map[string]*policyv1.PodDisruptionBudget{},
	}
	for _, res := range readKustomization(t).Resources {
		path := filepath.Join(kubeDir, res)
		for i, doc := range yamlDocuments(t, path) {
			var tm struct{ APIVersion, Kind string }
			if err := yaml.Unmarshal(doc, &tm); err != nil {
				t.Fatalf("%s document %d: %v", path, i, err)
			}
			var name string
			switch tm.APIVersion + " " + tm.Kind {
			case "apps/v1 Deployment":
				name = decodeInto(t, path, i, doc, c.deployments)
			case "apps/v1 StatefulSet":
				name = decodeInto(t, path, i, doc, c.statefulSets)
			case "v1 Service":
				name = decodeInto(t, path, i, doc, c.services)
			case "v1 ConfigMap":
				name = decodeInto(t, path, i, doc, c.configMaps)
			case "policy/v1 PodDisruptionBudget":
				name = decodeInto(t, path, i, doc, c.pdbs)
			default:
				t.Fatalf("%s document %d: unexpected %s %s; teach the tests about it", path, i, tm.APIVersion, tm.Kind)
			}
			if name == "" {
				t.Fatalf("%s document %d: %s without metadata.name", path, i, tm.Kind)
			}
		}
	}
	return c
}

// object is what decodeInto needs of an API object.
type object interface{ GetName() string }

// decodeInto decodes doc strictly into a new T and files it under its name.
func decodeInto[T any, PT interface {
	*T
	object
}](t *testing.T, path string, i int, doc []byte, into map[string]PT) string {
	t.Helper()
	obj := PT(new(T))
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		t.Fatalf("%s document %d: %v", path, i, err)
	}
	name := obj.GetName()
	if _, dup := into[name]; dup {
		t.Fatalf("%s document %d: a second object named %q of the same kind", path, i, name)
	}
	into[name] = obj
	return name
}

// loadSecretTemplate decodes secret.example.yaml, which is not in the
// kustomization on purpose.
func loadSecretTemplate(t *testing.T) *corev1.Secret {
	t.Helper()
	var s corev1.Secret
	decodeFile(t, filepath.Join(kubeDir, "secret.example.yaml"), &s)
	return &s
}

var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// yamlDocuments splits the file at path into its YAML documents, leaving out
// empty ones.
func yamlDocuments(t *testing.T, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var docs [][]byte
	for _, d := range docSeparator.Split(string(b), -1) {
		if strings.TrimSpace(stripComments(d)) != "" {
			docs = append(docs, []byte(d))
		}
	}
	return docs
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// decodeFile decodes the single YAML document at path strictly into v.
func decodeFile(t *testing.T, path string, v any) {
	t.Helper()
	docs := yamlDocuments(t, path)
	if len(docs) != 1 {
		t.Fatalf("%s: got %d YAML documents, want 1", path, len(docs))
	}
	if err := yaml.UnmarshalStrict(docs[0], v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
