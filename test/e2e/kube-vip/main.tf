# kube-vip in ARP mode with leader election on the control-plane nodes
# h1-h3, holding a second VIP, 10.77.0.200, for the end-to-end test: kha
# renders the static pods and delivers them over SSH, once the VIP is free
# (check_vip); the test runs each from its manifest and moves the VIP.

# The Lease's timings the test measures (seconds); null: kha's defaults.
variable "lease_timings" {
  type    = object({ duration = number, renew = number, retry = number })
  default = null
}

resource "kha_cluster_endpoints" "cluster" {
  control_plane_nodes = [for i in [1, 2, 3] : { name = "h${i}", ip = "10.77.0.1${i}" }]
  external_lb         = { address = "10.77.0.200", nodes = [] } # kube-vip binds no socket
}

resource "kha_kube_vip" "cp" {
  for_each        = { for n in kha_cluster_endpoints.cluster.control_plane_nodes : n.name => n }
  node_name       = each.key
  address         = kha_cluster_endpoints.cluster.external_lb.address
  interface       = "eth0"
  nodes           = [for n in kha_cluster_endpoints.cluster.control_plane_nodes : { name = n.name, ip = n.ip }]
  subnet          = 24
  kubeconfig_path = "/etc/kha/kube-vip.conf"
  manifest_path   = "/etc/kha/manifests/kube-vip.yml"
  ssh             = { host = each.value.ip }
  leader_election = var.lease_timings == null ? null : {
    lease_duration = var.lease_timings.duration
    renew_deadline = var.lease_timings.renew
    retry_period   = var.lease_timings.retry
  }
}
