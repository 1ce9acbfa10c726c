package deploy_test

import (
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentfix/agentfix/jobs"
)

// scaledObject is the part of KEDA's ScaledObject the manifest uses (KEDA's
// Go types are not a dependency); decoding is strict.
type scaledObject struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		ScaleTargetRef struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Name       string `json:"name"`
		} `json:"scaleTargetRef"`
		MinReplicaCount int `json:"minReplicaCount"`
		MaxReplicaCount int `json:"maxReplicaCount"`
		PollingInterval int `json:"pollingInterval"`
		CooldownPeriod  int `json:"cooldownPeriod"`
		Advanced        struct {
			HorizontalPodAutoscalerConfig struct {
				Behavior struct {
					ScaleDown struct {
						StabilizationWindowSeconds int `json:"stabilizationWindowSeconds"`
						Policies                   []struct {
							Type          string `json:"type"`
							Value         int    `json:"value"`
							PeriodSeconds int    `json:"periodSeconds"`
						} `json:"policies"`
					} `json:"scaleDown"`
				} `json:"behavior"`
			} `json:"horizontalPodAutoscalerConfig"`
		} `json:"advanced"`
		Triggers []struct {
			Type              string `json:"type"`
			AuthenticationRef struct {
				Name string `json:"name"`
			} `json:"authenticationRef"`
			Metadata map[string]string `json:"metadata"`
		} `json:"triggers"`
	} `json:"spec"`
}

func TestKEDAScaledObject(t *testing.T) {
	var so scaledObject
	decodeFile(t, filepath.Join(kubeDir, "keda-scaledobject.yaml"), &so)
	c := loadCluster(t)
	if so.APIVersion != "keda.sh/v1alpha1" || so.Kind != "ScaledObject" {
		t.Errorf("got %s %s, want keda.sh/v1alpha1 ScaledObject", so.APIVersion, so.Kind)
	}
	ref := so.Spec.ScaleTargetRef
	if ref.Kind != "Deployment" || c.deployments[ref.Name] == nil || ref.Name != workerName {
		t.Errorf("scaleTargetRef %+v: want the Deployment %s", ref, workerName)
	}
	if so.Spec.MinReplicaCount < 1 || so.Spec.MaxReplicaCount <= so.Spec.MinReplicaCount {
		t.Errorf("replicas %d..%d: want at least one worker (interactive tasks need one) and room to grow",
			so.Spec.MinReplicaCount, so.Spec.MaxReplicaCount)
	}
	if so.Spec.Advanced.HorizontalPodAutoscalerConfig.Behavior.ScaleDown.StabilizationWindowSeconds < 300 {
		t.Errorf("scale-down stabilization below 5 minutes: a stopped worker restarts its runs from scratch")
	}

	// Both lists of the agent queue, as asynq names them, on the Redis
	// Service, with the per-worker agent concurrency as the target.
	// The scaler authenticates with the password the Redis requires.
	var auth struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name   string            `json:"name"`
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
		Spec struct {
			SecretTargetRef []struct {
				Parameter string `json:"parameter"`
				Name      string `json:"name"`
				Key       string `json:"key"`
			} `json:"secretTargetRef"`
		} `json:"spec"`
	}
	decodeFile(t, filepath.Join(kubeDir, "keda-triggerauthentication.yaml"), &auth)
	if ref := auth.Spec.SecretTargetRef; auth.Kind != "TriggerAuthentication" || len(ref) != 1 ||
		ref[0].Parameter != "password" || ref[0].Name != secretName || ref[0].Key != "redis-password" {
		t.Errorf("keda-triggerauthentication.yaml %+v: want the password from %s's redis-password", auth, secretName)
	}
	concurrency := c.configMaps[configMapName].Data["AGENTFIX_AGENT_CONCURRENCY"]
	svc := c.services[redisName]
	var lists []string
	for i, tr := range so.Spec.Triggers {
		if tr.Type != "redis" {
			t.Errorf("trigger %d: type %q, want redis (KEDA's Redis list scaler)", i, tr.Type)
		}
		lists = append(lists, tr.Metadata["listName"])
		host, port, err := net.SplitHostPort(tr.Metadata["address"])
		if err != nil || !strings.HasPrefix(host, svc.Name+".") || port != itoa(svc.Spec.Ports[0].Port) {
			t.Errorf("trigger %d: address %q, want %s.<namespace>… on port %d", i, tr.Metadata["address"], svc.Name, svc.Spec.Ports[0].Port)
		}
		if tr.AuthenticationRef.Name != auth.Metadata.Name {
			t.Errorf("trigger %d: authenticationRef %q, want %q (Redis requires a password)", i, tr.AuthenticationRef.Name, auth.Metadata.Name)
		}
		if got := tr.Metadata["listLength"]; got != concurrency {
			t.Errorf("trigger %d: listLength %q, want AGENTFIX_AGENT_CONCURRENCY %q", i, got, concurrency)
		}
	}
	prefix := "asynq:{" + jobs.QueueAgent + "}:"
	if diff := cmp.Diff([]string{prefix + "pending", prefix + "active"}, lists); diff != "" {
		t.Errorf("listName of the triggers (-want +got):\n%s", diff)
	}
}
