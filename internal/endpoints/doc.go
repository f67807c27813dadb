// Package endpoints computes how every part of a Kubernetes cluster reaches
// kube-apiserver: the access endpoint of each node role in each load-balancer
// mode, the certificate SANs that make all of them verify, the kubeadm
// controlPlaneEndpoint, /etc/hosts lines and the node-local load balancer's
// listen address and backends.
//
// The arithmetic follows kubespray's (roles/kubespray_defaults and the
// control-plane role), with its known defects corrected; each correction is
// named where it is made. The package is pure: no I/O, no Terraform types.
package endpoints
