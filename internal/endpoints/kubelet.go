package endpoints

import (
	"math"
	"strconv"
	"strings"

	"github.com/kha/terraform-provider-kha/internal/problem"
)

// kubeadm's ControlPlaneKubeletLocalMode: since 1.33 kubeadm writes a
// control-plane node's kubelet.conf with the node's own apiserver
// (InitConfiguration's localAPIEndpoint), not controlPlaneEndpoint, so
// that a kubelet upgraded before the other apiservers never reaches an
// older one. The gate came in 1.31 (off), was on by default from 1.33 and
// was removed in 1.36, where kubeadm always does it.
const (
	kubeletLocalModeGate      = "ControlPlaneKubeletLocalMode"
	kubeletLocalModeSince     = 31
	kubeletLocalModeByDefault = 33
	kubeletLocalModeAlways    = 36
)

// kubeadmMinor is the minor release of kubernetes_version ("v1.36.3" is
// 36); ok is false when it is unset. A major release after 1 counts as
// newer than every 1.x.
func kubeadmMinor(version string) (minor int, ok bool) {
	major, rest, found := strings.Cut(strings.TrimPrefix(version, "v"), ".")
	if !found {
		return 0, false
	}
	if major != "1" {
		return math.MaxInt, true
	}
	m, _, _ := strings.Cut(rest, ".")
	n, err := strconv.Atoi(m)
	return n, err == nil
}

// parseKubeletLocalMode decides whether control-plane kubelets use their
// own apiserver, as kubeadm of kubernetes_version does unless
// control_plane_kubelet_local_mode says otherwise, and the feature gate
// kubeadm needs to agree. Unset, the version is today's kubeadm's.
func (c *cluster) parseKubeletLocalMode(ps *problem.Problems, in KubeadmInput) {
	minor, known := kubeadmMinor(in.KubernetesVersion)
	if !known {
		minor = kubeletLocalModeAlways
	}
	byDefault := minor >= kubeletLocalModeByDefault
	c.kubeletLocalMode = byDefault
	if in.ControlPlaneKubeletLocalMode == nil {
		return
	}
	want := *in.ControlPlaneKubeletLocalMode
	at := problem.Root("kubeadm").At("control_plane_kubelet_local_mode")
	switch {
	case !want && minor >= kubeletLocalModeAlways:
		version := "unset, today's kubeadm"
		if known {
			version = in.KubernetesVersion
		}
		ps.Errorf(at, "kubeadm Always Uses the Local Apiserver",
			"control_plane_kubelet_local_mode = false, but kubeadm.kubernetes_version is %s: kubeadm 1.36 removed the %s "+
				"gate and points every control-plane kubelet at its own apiserver, and `kubeadm upgrade` would undo "+
				"the load balancer kha wrote. Remove control_plane_kubelet_local_mode, or set kubeadm.kubernetes_version "+
				"to the cluster's release if it is older than v1.36.0.", version, kubeletLocalModeGate)
		return
	case want != byDefault && minor >= kubeletLocalModeSince:
		c.kubeletLocalModeGate = &want
	}
	c.kubeletLocalMode = want
}
