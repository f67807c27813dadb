# Three control-plane nodes, two workers, node-local HAProxy on every worker.
resource "kha_cluster_endpoints" "cluster" {
  control_plane_nodes = [
    { name = "cp1", ip = "10.0.0.11" },
    { name = "cp2", ip = "10.0.0.12" },
    { name = "cp3", ip = "10.0.0.13" },
  ]
  worker_nodes = [
    { name = "w1", ip = "10.0.0.21" },
    { name = "w2", ip = "10.0.0.22" },
  ]

  local_lb = {
    type             = "haproxy"
    healthcheck_port = 8081
  }

  # Names clients outside the cluster use, added to the apiserver certificate.
  supplementary_addresses = ["k8s.example.com"]
}

# The same cluster behind a VIP held by keepalived on the control-plane nodes.
# HAProxy there binds the VIP, so it must use another port than kube-apiserver.
resource "kha_cluster_endpoints" "vip" {
  control_plane_nodes = kha_cluster_endpoints.cluster.control_plane_nodes

  external_lb = {
    address               = "10.0.0.100"
    port                  = 8443
    domain_name           = "api.k8s.example.com"
    runs_on_control_plane = true
  }

  # kube-apiserver --shutdown-delay-duration (into kubeadm_cluster_configuration):
  # longer than the cloud or HAProxy health check needs to drop a stopping
  # apiserver, or the plan warns.
  apiserver_shutdown_delay_duration = "15s"
}

output "kubeadm_control_plane_endpoint" {
  value = kha_cluster_endpoints.vip.kubeadm_control_plane_endpoint # "api.k8s.example.com:8443"
}

output "apiserver_cert_sans" {
  value = kha_cluster_endpoints.vip.apiserver_cert_sans
}

# Pods outside the host network (calico-kube-controllers, controllers) cannot
# reach a node-local load balancer on localhost: they get the VIP.
output "cilium_values" {
  value = kha_cluster_endpoints.vip.cilium_values # { k8sServiceHost = "api.k8s.example.com", k8sServicePort = "8443" }
}
