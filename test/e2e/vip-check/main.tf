# A keepalived pair on h4 and h5 for a third address, 10.77.0.102, for the
# end-to-end test of check_vip: another host holds the address before the
# first apply, which must stop before either node changes. No keepalived
# runs on this configuration: the check comes before any claim.

locals {
  nodes = [{ name = "h4", ip = "10.77.0.14", priority = 150 }, { name = "h5", ip = "10.77.0.15", priority = 100 }]
}

resource "kha_keepalived_config" "pair" {
  for_each          = { for n in local.nodes : n.name => n }
  node              = each.key
  nodes             = local.nodes
  vip               = "10.77.0.102"
  vip_prefix        = 24
  interface         = "eth0"
  virtual_router_id = 78
  config_path       = "/etc/kha/keepalived-check.conf"
  reload_command    = ""
  ssh               = { host = each.value.ip }
}
