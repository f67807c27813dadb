package lbconfig

import (
	"fmt"
	"path"
	"strings"
)

// Kind is the load balancer implementation.
type Kind string

const (
	HAProxy Kind = "haproxy"
	Nginx   Kind = "nginx"
)

// Default images and pod settings, as kubespray has them.
const (
	DefaultHAProxyImage  = "docker.io/library/haproxy:3.2.19-alpine"
	DefaultNginxImage    = "docker.io/library/nginx:1.30.1-alpine"
	DefaultCPURequest    = "25m"
	DefaultMemoryRequest = "32M"
)

// Pod describes the kubelet static pod that runs a load balancer.
type Pod struct {
	Kind Kind
	// Name defaults to "haproxy" or "nginx-proxy".
	Name string
	// Image defaults to DefaultHAProxyImage or DefaultNginxImage.
	Image string
	// ConfigDir is the host directory holding the rendered config.
	ConfigDir string
	// ConfigSHA256 goes into an annotation so that a changed config
	// changes the manifest, which makes the kubelet restart the pod.
	ConfigSHA256 string
	// HealthcheckPort, when not 0, gets liveness and readiness probes.
	HealthcheckPort int
	// HealthOnLoopback: the health port answers on the host's loopback
	// only, so the probes ask 127.0.0.1 (the kubelet's default is the
	// pod's IP, which with hostNetwork is the node's).
	HealthOnLoopback bool
	// CAFile, when set, is mounted read-only at the same path so health
	// checks inside the pod can verify the apiservers.
	CAFile string
	// ClientCert, when set, is the health checks' client certificate:
	// it and its key (ClientKeyFile) are mounted read-only the same way.
	ClientCert                string
	CPURequest, MemoryRequest string
}

// ClientKeyFile is where HAProxy looks for the key of a client
// certificate without one: the same name ending in .key
// (ssl-load-extra-del-ext), as kubeadm names its pairs.
func ClientKeyFile(cert string) string {
	return strings.TrimSuffix(cert, path.Ext(cert)) + ".key"
}

// hostFiles are the single host files the pod mounts besides its config.
func (p Pod) hostFiles() [][2]string {
	var files [][2]string
	if p.CAFile != "" {
		files = append(files, [2]string{"ca", p.CAFile})
	}
	if p.ClientCert != "" {
		files = append(files, [2]string{"client-cert", p.ClientCert}, [2]string{"client-key", ClientKeyFile(p.ClientCert)})
	}
	return files
}

// container is the container's name, as in kubespray's manifests.
func (k Kind) container() string {
	if k == Nginx {
		return "nginx-proxy"
	}
	return "haproxy"
}

// configMount is where each image reads its configuration.
func (k Kind) configMount() string {
	if k == Nginx {
		return "/etc/nginx"
	}
	return "/usr/local/etc/haproxy"
}

// RenderStaticPod renders the pod manifest (YAML, deterministic).
func RenderStaticPod(p Pod) (string, error) {
	if p.Kind != HAProxy && p.Kind != Nginx {
		return "", fmt.Errorf("unknown load balancer kind %q", p.Kind)
	}
	name, image, app := "haproxy", DefaultHAProxyImage, "kube-haproxy"
	if p.Kind == Nginx {
		name, image, app = "nginx-proxy", DefaultNginxImage, "kube-nginx"
	}
	if p.Name != "" {
		name = p.Name
	}
	if p.Image != "" {
		image = p.Image
	}
	cpu, memory := p.CPURequest, p.MemoryRequest
	if cpu == "" {
		cpu = DefaultCPURequest
	}
	if memory == "" {
		memory = DefaultMemoryRequest
	}
	if !path.IsAbs(p.ConfigDir) {
		return "", fmt.Errorf("config directory %q is not absolute", p.ConfigDir)
	}
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("# Rendered by kha. The kubelet restarts the pod when the config checksum changes.")
	w("apiVersion: v1")
	w("kind: Pod")
	w("metadata:")
	w("  name: %s", q(name))
	w("  namespace: kube-system")
	w("  labels:")
	w("    addonmanager.kubernetes.io/mode: Reconcile")
	w("    k8s-app: %s", app)
	w("  annotations:")
	w("    %s-cfg-checksum: %s", p.Kind, q("sha256:"+p.ConfigSHA256))
	w("spec:")
	w("  hostNetwork: true")
	w("  dnsPolicy: ClusterFirstWithHostNet")
	w("  nodeSelector:")
	w("    kubernetes.io/os: linux")
	w("  priorityClassName: system-node-critical")
	w("  containers:")
	w("    - name: %s", p.Kind.container())
	w("      image: %s", q(image))
	w("      imagePullPolicy: IfNotPresent")
	w("      resources:")
	w("        requests:")
	w("          cpu: %s", q(cpu))
	w("          memory: %s", q(memory))
	if p.HealthcheckPort != 0 {
		for _, probe := range []string{"livenessProbe", "readinessProbe"} {
			w("      %s:", probe)
			w("        httpGet:")
			if p.HealthOnLoopback {
				w("          host: 127.0.0.1")
			}
			w("          path: /healthz")
			w("          port: %d", p.HealthcheckPort)
		}
	}
	w("      volumeMounts:")
	w("        - name: config")
	w("          mountPath: %s", q(p.Kind.configMount()))
	w("          readOnly: true")
	for _, f := range p.hostFiles() {
		w("        - name: %s", f[0])
		w("          mountPath: %s", q(f[1]))
		w("          readOnly: true")
	}
	w("  volumes:")
	w("    - name: config")
	w("      hostPath:")
	w("        path: %s", q(p.ConfigDir))
	w("        type: Directory")
	for _, f := range p.hostFiles() {
		w("    - name: %s", f[0])
		w("      hostPath:")
		w("        path: %s", q(f[1]))
		w("        type: File")
	}
	return b.String(), nil
}
