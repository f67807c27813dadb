package testhost

import (
	"bytes"
	"testing"

	"go.yaml.in/yaml/v3"
)

// Pod is the part of a Kubernetes v1 Pod that kha's static pods use.
// ParsePod decodes with KnownFields, so a misspelt or misplaced field in a
// rendered manifest is an error, not a field the kubelet would ignore.
type Pod struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name        string            `yaml:"name"`
		Namespace   string            `yaml:"namespace"`
		Labels      map[string]string `yaml:"labels"`
		Annotations map[string]string `yaml:"annotations"`
	} `yaml:"metadata"`
	Spec struct {
		HostNetwork bool `yaml:"hostNetwork"`
		HostAliases []struct {
			IP        string   `yaml:"ip"`
			Hostnames []string `yaml:"hostnames"`
		} `yaml:"hostAliases"`
		DNSPolicy         string            `yaml:"dnsPolicy"`
		NodeSelector      map[string]string `yaml:"nodeSelector"`
		Priority          int               `yaml:"priority"`
		PriorityClassName string            `yaml:"priorityClassName"`
		Containers        []Container       `yaml:"containers"`
		Volumes           []struct {
			Name     string `yaml:"name"`
			HostPath struct {
				Path string `yaml:"path"`
				Type string `yaml:"type"`
			} `yaml:"hostPath"`
		} `yaml:"volumes"`
	} `yaml:"spec"`
}

// Container is a Pod's container.
type Container struct {
	Name            string   `yaml:"name"`
	Image           string   `yaml:"image"`
	ImagePullPolicy string   `yaml:"imagePullPolicy"`
	Command         []string `yaml:"command"`
	Args            []string `yaml:"args"`
	Env             []struct {
		Name  string `yaml:"name"`
		Value string `yaml:"value"`
	} `yaml:"env"`
	Resources struct {
		Requests map[string]string `yaml:"requests"`
	} `yaml:"resources"`
	LivenessProbe   Probe `yaml:"livenessProbe"`
	ReadinessProbe  Probe `yaml:"readinessProbe"`
	SecurityContext struct {
		Privileged   bool `yaml:"privileged"`
		Capabilities struct {
			Add  []string `yaml:"add"`
			Drop []string `yaml:"drop"`
		} `yaml:"capabilities"`
	} `yaml:"securityContext"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		ReadOnly  bool   `yaml:"readOnly"`
	} `yaml:"volumeMounts"`
}

// Probe is an HTTP GET probe.
type Probe struct {
	HTTPGet struct {
		Host string `yaml:"host"`
		Path string `yaml:"path"`
		Port int    `yaml:"port"`
	} `yaml:"httpGet"`
}

// ParsePod decodes a manifest into a Pod, refusing unknown fields.
func ParsePod(manifest []byte) (Pod, error) {
	var pod Pod
	dec := yaml.NewDecoder(bytes.NewReader(manifest))
	dec.KnownFields(true)
	err := dec.Decode(&pod)
	return pod, err
}

// MustParsePod is ParsePod for a test: an error fails it.
func MustParsePod(t testing.TB, manifest string) Pod {
	t.Helper()
	pod, err := ParsePod([]byte(manifest))
	if err != nil {
		t.Fatalf("the manifest is not a pod: %v\n%s", err, manifest)
	}
	return pod
}
