resource "kha_cluster_endpoints" "cluster" {
  control_plane_nodes = [for i in [1, 2, 3] : { name = "cp${i}", ip = "10.0.0.1${i}" }]
  external_lb         = { address = "10.0.0.100", nodes = [] } # kube-vip binds no socket: no port trap
}

# ARP with leader election: one control-plane node holds the VIP at a time.
resource "kha_kube_vip" "cp" {
  for_each = { for n in kha_cluster_endpoints.cluster.control_plane_nodes : n.name => n }

  node_name = each.key
  address   = kha_cluster_endpoints.cluster.external_lb.address
  interface = "eth0"
  # check_vip: before kube-vip starts, the VIP must be on eth0's link and
  # answered by none but these nodes; every refresh fills vip_holders.
  nodes = [for n in kha_cluster_endpoints.cluster.control_plane_nodes : { name = n.name, ip = n.ip }]
  # For the apply before `kubeadm init` only: kube-vip on the first node reads super-admin.conf.
  bootstrap = false
  ssh       = { host = each.value.ip }
}

# BGP: every control-plane node advertises the VIP to the routers.
resource "kha_kube_vip" "bgp" {
  node_name = "cp1"
  address   = "10.0.0.100"
  mode      = "bgp"
  bgp = {
    router_id = "10.0.0.11"
    as        = 65000
    peers     = [{ address = "10.0.0.1", as = 65001 }]
  }
}
