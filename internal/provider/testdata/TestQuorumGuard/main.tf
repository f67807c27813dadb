# etcd's quorum from one plan to the next: stacked etcd on the
# control-plane nodes (kha_cluster_endpoints, a draining node still runs
# its member) and etcd on hosts of its own (kha_etcd_access, a draining
# member already left out).
variable "nodes" { type = list(string) }
variable "draining" {
  type    = list(string)
  default = []
}
variable "allow" {
  type    = bool
  default = false
}

locals {
  ip = { cp1 = "10.0.0.11", cp2 = "10.0.0.12", cp3 = "10.0.0.13", cp4 = "10.0.0.14", cp5 = "10.0.0.15" }
}

resource "kha_cluster_endpoints" "test" {
  control_plane_nodes = [for n in var.nodes : { name = n, ip = local.ip[n], draining = contains(var.draining, n) }]
  allow_quorum_risk   = var.allow
}

resource "kha_etcd_access" "test" {
  members           = [for n in var.nodes : { name = n, ip = local.ip[n] } if !contains(var.draining, n)]
  allow_quorum_risk = var.allow
}
