# kube-vip on every control-plane node, holding the VIP that
# kha_cluster_endpoints puts into every endpoint and SAN.
resource "kha_cluster_endpoints" "c" {
  control_plane_nodes = [
    { name = "cp1", ip = "10.0.0.11" },
    { name = "cp2", ip = "10.0.0.12" },
  ]
  external_lb = { address = "10.0.0.100", nodes = [] }
}

resource "kha_kube_vip" "cp1" {
  node_name = kha_cluster_endpoints.c.control_plane_nodes[0].name
  address   = kha_cluster_endpoints.c.external_lb.address
  interface = "eth0"
  bootstrap = true
}

# cp2's apiserver binds its own address alone: kube-vip renews its Lease there.
resource "kha_kube_vip" "cp2" {
  node_name               = kha_cluster_endpoints.c.control_plane_nodes[1].name
  address                 = kha_cluster_endpoints.c.external_lb.address
  local_apiserver_address = kha_cluster_endpoints.c.control_plane_nodes[1].ip
}

resource "kha_kube_vip" "bgp" {
  node_name = "cp1"
  address   = "10.0.0.100"
  mode      = "bgp"
  bgp = {
    router_id = "10.0.0.11"
    peers     = [{ address = "10.0.0.1", as = 65001 }, { address = "fd00::1", as = 65002, multihop = true }]
  }
  load_balancer = { forwarding_method = "masquerade" }
}
