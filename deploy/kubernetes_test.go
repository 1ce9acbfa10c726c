package deploy_test

import (
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/agentfix/agentfix/jobs/worker"
)

// Shutdown budgets of the bot that the grace periods must cover.
const (
	// httpShutdown is the graceful shutdown of every HTTP listener
	// (cmd/bot's shutdownTimeout).
	httpShutdown = 15 * time.Second
	// workerWrapUp is the longest a worker takes from SIGTERM to exit: the
	// time running tasks get to finish before asynq requeues and cancels
	// them, then the bounded wait for their handlers to record the run and
	// report to GitHub, and the HTTP listener's shutdown.
	workerWrapUp = worker.DefaultShutdownTimeout + worker.DefaultGitHubTimeout + httpShutdown
)

// optionalManifests are in deploy/kubernetes but deliberately not in the
// default kustomization.
var optionalManifests = map[string]string{
	"secret.example.yaml":             "a template; the real Secret is created by hand",
	"keda-scaledobject.yaml":          "needs KEDA in the cluster",
	"keda-triggerauthentication.yaml": "needs KEDA in the cluster",
}

func TestKustomizationListsTheManifests(t *testing.T) {
	k := readKustomization(t)
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		t.Errorf("kustomization.yaml: got %s %s, want kustomize.config.k8s.io/v1beta1 Kustomization", k.APIVersion, k.Kind)
	}
	listed := map[string]bool{}
	for _, r := range k.Resources {
		listed[r] = true
		if _, err := os.Stat(filepath.Join(kubeDir, r)); err != nil {
			t.Errorf("kustomization.yaml lists %s: %v", r, err)
		}
		if why, ok := optionalManifests[r]; ok {
			t.Errorf("kustomization.yaml lists %s, which must stay out of it (%s)", r, why)
		}
	}
	files, err := filepath.Glob(filepath.Join(kubeDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		_, optional := optionalManifests[name]
		if name != "kustomization.yaml" && !optional && !listed[name] {
			t.Errorf("%s is in %s but not in kustomization.yaml", name, kubeDir)
		}
	}

	// The images transformer rewrites the bot's image by name.
	c := loadCluster(t)
	var imageNames []string
	for _, img := range k.Images {
		imageNames = append(imageNames, img.Name)
	}
	if diff := cmp.Diff([]string{"agentfix"}, imageNames); diff != "" {
		t.Errorf("kustomization.yaml images (-want +got):\n%s", diff)
	}
	for _, name := range []string{webhookName, workerName} {
		for _, ctr := range c.deployments[name].Spec.Template.Spec.Containers {
			if ctr.Image != "agentfix" {
				t.Errorf("%s container %s: image %q, want \"agentfix\" (set by kustomization.yaml images)", name, ctr.Name, ctr.Image)
			}
		}
	}
}

func TestSelectorsMatchTheirPods(t *testing.T) {
	c := loadCluster(t)
	ws := c.workloads()
	if len(ws) != 3 {
		t.Fatalf("got %d workloads, want 3 (webhook, worker, redis)", len(ws))
	}
	for _, w := range ws {
		if len(w.selector) == 0 {
			t.Errorf("%s %s: empty selector", w.kind, w.name)
		}
		if !matches(w.selector, w.template.Labels) {
			t.Errorf("%s %s: selector %v does not match its pod labels %v", w.kind, w.name, w.selector, w.template.Labels)
		}
		for _, other := range ws {
			if other.name != w.name && matches(w.selector, other.template.Labels) {
				t.Errorf("%s %s: selector %v also matches the pods of %s", w.kind, w.name, w.selector, other.name)
			}
		}
	}

	for _, tc := range []struct{ service, workload string }{
		{webhookName, webhookName},
		{redisName, redisName},
	} {
		t.Run(tc.service, func(t *testing.T) {
			svc, ok := c.services[tc.service]
			if !ok {
				t.Fatalf("no Service %s", tc.service)
			}
			var got []string
			var target *corev1.PodTemplateSpec
			for _, w := range ws {
				if matches(svc.Spec.Selector, w.template.Labels) {
					got = append(got, w.name)
					target = w.template
				}
			}
			if diff := cmp.Diff([]string{tc.workload}, got); diff != "" {
				t.Fatalf("pods the Service selects (-want +got):\n%s", diff)
			}
			for _, p := range svc.Spec.Ports {
				if _, ok := resolvePort(target.Spec.Containers[0], p.TargetPort.String()); !ok {
					t.Errorf("port %s: targetPort %s is no port of %s", p.Name, p.TargetPort.String(), tc.workload)
				}
			}
		})
	}
	if got := c.statefulSets[redisName].Spec.ServiceName; c.services[got] == nil {
		t.Errorf("StatefulSet %s: serviceName %q is no Service", redisName, got)
	}
}

func TestPodDisruptionBudgets(t *testing.T) {
	c := loadCluster(t)
	for _, tc := range []struct{ pdb, deployment string }{
		{webhookName, webhookName},
		{workerName, workerName},
	} {
		t.Run(tc.pdb, func(t *testing.T) {
			pdb, ok := c.pdbs[tc.pdb]
			if !ok {
				t.Fatalf("no PodDisruptionBudget %s", tc.pdb)
			}
			if pdb.Spec.Selector == nil || len(pdb.Spec.Selector.MatchExpressions) > 0 {
				t.Fatalf("selector %v: want matchLabels only", pdb.Spec.Selector)
			}
			var got []string
			for _, w := range c.workloads() {
				if matches(pdb.Spec.Selector.MatchLabels, w.template.Labels) {
					got = append(got, w.name)
				}
			}
			if diff := cmp.Diff([]string{tc.deployment}, got); diff != "" {
				t.Errorf("pods the budget selects (-want +got):\n%s", diff)
			}
			replicas := int(*c.deployments[tc.deployment].Spec.Replicas)
			switch {
			case pdb.Spec.MinAvailable != nil:
				if n := pdb.Spec.MinAvailable.IntValue(); n < 1 || n >= replicas {
					t.Errorf("minAvailable %d with %d replicas: want at least 1 and fewer than the replicas, or no node drains", n, replicas)
				}
			case pdb.Spec.MaxUnavailable != nil:
				if n := pdb.Spec.MaxUnavailable.IntValue(); n < 1 || n >= replicas {
					t.Errorf("maxUnavailable %d with %d replicas: want at least 1 and fewer than the replicas", n, replicas)
				}
			default:
				t.Errorf("neither minAvailable nor maxUnavailable set")
			}
		})
	}
}

func TestProbesAskEachProcessOnItsListenPort(t *testing.T) {
	c := loadCluster(t)
	_, port, err := net.SplitHostPort(c.configMaps[configMapName].Data["AGENTFIX_LISTEN_ADDR"])
	if err != nil {
		t.Fatalf("AGENTFIX_LISTEN_ADDR of %s: %v", configMapName, err)
	}
	for _, name := range []string{webhookName, workerName} {
		t.Run(name, func(t *testing.T) {
			ctr := onlyContainer(t, c.deployments[name].Spec.Template.Spec)
			for _, p := range []struct {
				kind  string
				probe *corev1.Probe
				path  string
			}{
				{"liveness", ctr.LivenessProbe, "/healthz"},
				{"readiness", ctr.ReadinessProbe, "/readyz"},
			} {
				if p.probe == nil || p.probe.HTTPGet == nil {
					t.Errorf("%s probe: want an httpGet probe", p.kind)
					continue
				}
				if got := p.probe.HTTPGet.Path; got != p.path {
					t.Errorf("%s probe path: got %q, want %q", p.kind, got, p.path)
				}
				n, ok := resolvePort(ctr, p.probe.HTTPGet.Port.String())
				if !ok || n != port {
					t.Errorf("%s probe port %s: resolves to %q, want the listen port %s", p.kind, p.probe.HTTPGet.Port.String(), n, port)
				}
			}
		})
	}
}

func TestContainersHaveResources(t *testing.T) {
	c := loadCluster(t)
	for _, w := range c.workloads() {
		for _, ctr := range w.template.Spec.Containers {
			t.Run(w.name+"/"+ctr.Name, func(t *testing.T) {
				req, lim := ctr.Resources.Requests, ctr.Resources.Limits
				for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
					if q, ok := req[r]; !ok || q.IsZero() {
						t.Errorf("no %s request", r)
					}
				}
				mem, ok := lim[corev1.ResourceMemory]
				if !ok || mem.IsZero() {
					t.Fatalf("no memory limit")
				}
				if mem.Cmp(req[corev1.ResourceMemory]) < 0 {
					t.Errorf("memory limit %s below its request %s", mem.String(), req.Memory().String())
				}
			})
		}
	}
}

func TestGracePeriods(t *testing.T) {
	c := loadCluster(t)
	worker := c.deployments[workerName].Spec.Template.Spec
	if got := grace(worker); got < workerWrapUp {
		t.Errorf("worker terminationGracePeriodSeconds: got %s, want at least %s (the worker's wrap-up)", got, workerWrapUp)
	}
	webhook := c.deployments[webhookName].Spec.Template.Spec
	var preStop time.Duration
	if h := onlyContainer(t, webhook).Lifecycle; h != nil && h.PreStop != nil && h.PreStop.Exec != nil {
		cmd := h.PreStop.Exec.Command
		if len(cmd) != 2 || cmd[0] != "sleep" {
			t.Fatalf("webhook preStop %q: want [sleep N]", cmd)
		}
		d, err := time.ParseDuration(cmd[1] + "s")
		if err != nil {
			t.Fatalf("webhook preStop %q: %v", cmd, err)
		}
		preStop = d
	}
	if got, want := grace(webhook), preStop+httpShutdown; got < want {
		t.Errorf("webhook terminationGracePeriodSeconds: got %s, want at least %s (preStop and the HTTP shutdown)", got, want)
	}
}

func grace(spec corev1.PodSpec) time.Duration {
	if spec.TerminationGracePeriodSeconds == nil {
		return 30 * time.Second // the Kubernetes default
	}
	return time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second
}

func TestRedisStatefulSet(t *testing.T) {
	c := loadCluster(t)
	sts := c.statefulSets[redisName]
	ctr := onlyContainer(t, sts.Spec.Template.Spec)
	if len(ctr.Args) == 0 || ctr.Args[0] != "redis-server" {
		t.Fatalf("redis args %q: want redis-server and its flags", ctr.Args)
	}
	// TestRedisFlags checks the flags themselves against a real redis-server.
	if got := *sts.Spec.Replicas; got != 1 {
		t.Errorf("replicas %d: want 1 (one primary; use Sentinel for failover)", got)
	}
	dir, _ := flagValue(ctr.Args, "--dir")
	var mountedClaim string
	for _, vm := range ctr.VolumeMounts {
		if vm.MountPath == dir {
			mountedClaim = vm.Name
		}
	}
	var claims []string
	for _, pvc := range sts.Spec.VolumeClaimTemplates {
		claims = append(claims, pvc.Name)
	}
	if mountedClaim == "" || !cmp.Equal(claims, []string{mountedClaim}) {
		t.Errorf("--dir %q is on volume %q; volumeClaimTemplates %q: want the append-only file on the claim", dir, mountedClaim, claims)
	}

	// The bot reaches this Redis through its Service, with the password
	// the Redis requires, both from the Secret's redis-password.
	if pw, _ := flagValue(ctr.Args, "--requirepass"); pw != "$(REDIS_PASSWORD)" || secretKeyOf(ctr, "REDIS_PASSWORD") != "redis-password" {
		t.Errorf("redis --requirepass %q with REDIS_PASSWORD from key %q: want $(REDIS_PASSWORD) from the Secret's redis-password", pw, secretKeyOf(ctr, "REDIS_PASSWORD"))
	}
	if secretKeyOf(ctr, "REDISCLI_AUTH") != "redis-password" {
		t.Errorf("redis REDISCLI_AUTH: want the Secret's redis-password, so the redis-cli probes authenticate")
	}
	tmpl := loadSecretTemplate(t)
	svc := c.services[redisName]
	for _, name := range []string{webhookName, workerName} {
		bot := onlyContainer(t, c.deployments[name].Spec.Template.Spec)
		if secretKeyOf(bot, "REDIS_PASSWORD") != "redis-password" {
			t.Errorf("%s REDIS_PASSWORD: want the Secret's redis-password", name)
		}
		u, err := url.Parse(containerEnv(t, c, tmpl, bot)["AGENTFIX_REDIS_URL"])
		if err != nil {
			t.Fatal(err)
		}
		pw, _ := u.User.Password()
		if u.Scheme != "redis" || u.Hostname() != svc.Name || u.Port() != itoa(svc.Spec.Ports[0].Port) || pw != tmpl.StringData["redis-password"] {
			t.Errorf("%s AGENTFIX_REDIS_URL %s: want redis://:PASSWORD@%s:%d/… with the Secret's redis-password", name, u, svc.Name, svc.Spec.Ports[0].Port)
		}
	}
}

// secretKeyOf returns the Secret key env variable name of ctr comes from.
func secretKeyOf(ctr corev1.Container, name string) string {
	for _, e := range ctr.Env {
		if e.Name == name && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			return e.ValueFrom.SecretKeyRef.Key
		}
	}
	return ""
}

func onlyContainer(t *testing.T, spec corev1.PodSpec) corev1.Container {
	t.Helper()
	if len(spec.Containers) != 1 || len(spec.InitContainers) > 0 {
		t.Fatalf("got %d containers and %d init containers, want one container", len(spec.Containers), len(spec.InitContainers))
	}
	return spec.Containers[0]
}

// resolvePort returns the number of the container port that port (a name or
// a number) refers to.
func resolvePort(ctr corev1.Container, port string) (string, bool) {
	for _, p := range ctr.Ports {
		if p.Name == port || itoa(p.ContainerPort) == port {
			return itoa(p.ContainerPort), true
		}
	}
	return "", false
}

// matches reports whether the label selector sel selects labels.
func matches(sel, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// flagValue returns the value after flag in args.
func flagValue(args []string, flag string) (string, bool) {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag {
			return args[i+1], true
		}
	}
	return "", false
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }
