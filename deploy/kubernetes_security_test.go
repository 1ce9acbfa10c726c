package deploy_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestPodsRunUnprivileged(t *testing.T) {
	c := loadCluster(t)
	uid := imageUID(t)
	for _, w := range c.workloads() {
		t.Run(w.name, func(t *testing.T) {
			spec := w.template.Spec
			psc := spec.SecurityContext
			if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
				t.Errorf("pod securityContext %+v: want runAsNonRoot and a non-zero runAsUser", psc)
			}
			if w.name != redisName && psc != nil && psc.RunAsUser != nil && *psc.RunAsUser != uid {
				t.Errorf("runAsUser %d: want the image's user %d (deploy/Dockerfile), which owns /data", *psc.RunAsUser, uid)
			}
			if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
				t.Errorf("automountServiceAccountToken: want false; nothing here talks to the Kubernetes API")
			}
			for _, ctr := range spec.Containers {
				sc := ctr.SecurityContext
				if sc == nil {
					t.Errorf("container %s: no securityContext", ctr.Name)
					continue
				}
				if sc.Privileged != nil && *sc.Privileged {
					t.Errorf("container %s: privileged", ctr.Name)
				}
				if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
					t.Errorf("container %s: allowPrivilegeEscalation must be false", ctr.Name)
				}
				if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
					t.Errorf("container %s: readOnlyRootFilesystem must be true", ctr.Name)
				}
				if sc.Capabilities == nil || len(sc.Capabilities.Add) > 0 ||
					!cmp.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
					t.Errorf("container %s: capabilities %+v, want drop [ALL] and none added", ctr.Name, sc.Capabilities)
				}
			}
		})
	}
}

// TestSandboxSettings checks what bwrap needs in the worker, and that only
// the worker gets it.
func TestSandboxSettings(t *testing.T) {
	c := loadCluster(t)
	worker := c.deployments[workerName].Spec.Template.Spec
	if worker.HostUsers == nil || *worker.HostUsers {
		t.Errorf("worker hostUsers: want false (a user namespace, which procMount: Unmasked requires)")
	}
	if worker.ShareProcessNamespace == nil || !*worker.ShareProcessNamespace {
		t.Errorf("worker shareProcessNamespace: want true (an init that reaps orphaned sandbox processes)")
	}
	sc := onlyContainer(t, worker).SecurityContext
	type loosened struct {
		ProcMount *corev1.ProcMountType
		Seccomp   *corev1.SeccompProfile
		AppArmor  *corev1.AppArmorProfile
	}
	unmasked := corev1.UnmaskedProcMount
	want := loosened{
		ProcMount: &unmasked,
		Seccomp:   &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined},
		AppArmor:  &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined},
	}
	if diff := cmp.Diff(want, loosened{sc.ProcMount, sc.SeccompProfile, sc.AppArmorProfile}); diff != "" {
		t.Errorf("worker container securityContext (-want +got):\n%s", diff)
	}

	for _, name := range []string{webhookName, redisName} {
		var spec corev1.PodSpec
		if d, ok := c.deployments[name]; ok {
			spec = d.Spec.Template.Spec
		} else {
			spec = c.statefulSets[name].Spec.Template.Spec
		}
		if p := spec.SecurityContext.SeccompProfile; p == nil || p.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("%s: pod seccompProfile %+v, want RuntimeDefault", name, p)
		}
		if spec.HostUsers != nil || spec.ShareProcessNamespace != nil {
			t.Errorf("%s: hostUsers or shareProcessNamespace set; only the worker needs them", name)
		}
		for _, ctr := range spec.Containers {
			if sc := ctr.SecurityContext; sc.ProcMount != nil || sc.SeccompProfile != nil || sc.AppArmorProfile != nil {
				t.Errorf("%s container %s: loosens procMount, seccomp or AppArmor; only the worker needs that", name, ctr.Name)
			}
		}
	}
}
