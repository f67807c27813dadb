# A kubeadm cluster with node-local load balancers for the nodes and a VIP
# with a name that kha runs (keepalived + HAProxy on two workers): mode
# local_lb_with_unmanaged_lb. control_plane_endpoint makes the VIP's name
# kubeadm's controlPlaneEndpoint and join address; cp1 then drains and
# leaves (stage: none, draining, removed), and that name stays.
variable "control_plane_endpoint" {
  type    = bool
  default = null
}
variable "stage" {
  type    = string
  default = "none"
}

locals {
  cp1 = var.stage == "removed" ? [] : [{ name = "cp1", ip = "10.62.0.11", draining = var.stage == "draining" }]
}

resource "kha_cluster_endpoints" "test" {
  control_plane_nodes = concat(local.cp1, [{ name = "cp2", ip = "10.62.0.12" }, { name = "cp3", ip = "10.62.0.13" }])
  worker_nodes        = [{ name = "w1", ip = "10.62.0.21" }, { name = "w2", ip = "10.62.0.22" }]
  local_lb            = { type = "haproxy", enabled = true }
  allow_quorum_risk   = true # cp1's etcd member is out: this test is about the endpoints
  external_lb = {
    address                = "10.62.0.100"
    port                   = 8443
    domain_name            = "api.k8s.example"
    nodes                  = ["w1", "w2"]
    control_plane_endpoint = var.control_plane_endpoint
  }
}
