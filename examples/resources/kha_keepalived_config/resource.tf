locals {
  lb_nodes = [
    { name = "lb1", ip = "10.0.0.5", priority = 150 },
    { name = "lb2", ip = "10.0.0.6", priority = 100 },
  ]
}

# The VIP of the external HAProxy pair follows the healthy load balancer.
resource "kha_keepalived_config" "vip" {
  for_each = { for n in local.lb_nodes : n.name => n }

  node              = each.key
  nodes             = local.lb_nodes
  vip               = "10.0.0.100"
  vip_prefix        = 24
  interface         = "eth0"
  virtual_router_id = 51
  healthcheck_port  = 8081 # kha_haproxy_config's health endpoint on the same node
  destroy_command   = "systemctl stop keepalived"

  ssh = { host = each.value.ip, user = "admin", sudo = true }
}
