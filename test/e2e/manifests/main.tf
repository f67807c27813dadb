# The YAML kha_cluster_endpoints renders for a MetalLB VIP and for kubeadm,
# for the end-to-end test to hand to the real apiserver (server-side dry
# run) and to kubeadm (config validate). Pure computation: no host.

terraform {
  required_providers {
    kha = {
      source = "kha/kha"
    }
  }
}

resource "kha_cluster_endpoints" "metallb" {
  control_plane_nodes      = [for i in [1, 2, 3] : { name = "h${i}", ip = "10.77.0.1${i}" }]
  worker_nodes             = [{ name = "h4", ip = "10.77.0.14" }, { name = "h5", ip = "10.77.0.15" }]
  apiserver_anonymous_auth = false
  local_lb                 = { enabled = true }
  external_lb = {
    address     = "10.77.0.200"
    port        = 6443
    domain_name = "api.k8s.example.com"
    nodes       = [] # MetalLB announces the VIP from nodes it picks; no load balancer binds it on a control-plane node
    metallb     = { address_pool = "apiserver" }
  }
  kubeadm = {
    kubernetes_version = "v1.36.3"
    etcd_endpoints     = [for i in [1, 2, 3] : "https://10.77.0.1${i}:2379"]
    etcd_ca_file       = "/etc/ssl/etcd/ssl/ca.pem"
    etcd_cert_file     = "/etc/ssl/etcd/ssl/node.pem"
    etcd_key_file      = "/etc/ssl/etcd/ssl/node-key.pem"
  }
}

output "metallb_manifests" {
  value = kha_cluster_endpoints.metallb.metallb_manifests
}

output "kubeadm_cluster_configuration" {
  value = kha_cluster_endpoints.metallb.kubeadm_cluster_configuration
}
