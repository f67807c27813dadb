package lbconfig

import (
	"bytes"
	"testing"

	"go.yaml.in/yaml/v3"
)

// testPod is the part of a Kubernetes v1 Pod the static pods use. Decoding
// with KnownFields makes a misspelt or misplaced field a test failure.
type testPod struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name        string            `yaml:"name"`
		Namespace   string            `yaml:"namespace"`
		Labels      map[string]string `yaml:"labels"`
		Annotations map[string]string `yaml:"annotations"`
	} `yaml:"metadata"`
	Spec struct {
		HostNetwork       bool              `yaml:"hostNetwork"`
		DNSPolicy         string            `yaml:"dnsPolicy"`
		NodeSelector      map[string]string `yaml:"nodeSelector"`
		PriorityClassName string            `yaml:"priorityClassName"`
		Containers        []struct {
			Name            string   `yaml:"name"`
			Image           string   `yaml:"image"`
			ImagePullPolicy string   `yaml:"imagePullPolicy"`
			Command         []string `yaml:"command"`
			Args            []string `yaml:"args"`
			Resources       struct {
				Requests map[string]string `yaml:"requests"`
			} `yaml:"resources"`
			LivenessProbe  testProbe `yaml:"livenessProbe"`
			ReadinessProbe testProbe `yaml:"readinessProbe"`
			VolumeMounts   []struct {
				Name      string `yaml:"name"`
				MountPath string `yaml:"mountPath"`
				ReadOnly  bool   `yaml:"readOnly"`
			} `yaml:"volumeMounts"`
		} `yaml:"containers"`
		Volumes []struct {
			Name     string `yaml:"name"`
			HostPath struct {
				Path string `yaml:"path"`
				Type string `yaml:"type"`
			} `yaml:"hostPath"`
		} `yaml:"volumes"`
	} `yaml:"spec"`
}

type testProbe struct {
	HTTPGet struct {
		Path string `yaml:"path"`
		Port int    `yaml:"port"`
	} `yaml:"httpGet"`
}

func parsePod(t *testing.T, manifest string) testPod {
	t.Helper()
	var pod testPod
	dec := yaml.NewDecoder(bytes.NewReader([]byte(manifest)))
	dec.KnownFields(true)
	if err := dec.Decode(&pod); err != nil {
		t.Fatalf("the manifest is not a pod: %v\n%s", err, manifest)
	}
	return pod
}
