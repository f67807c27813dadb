resource "kha_keepalived_config" "lb1" {
  node              = "lb1"
  nodes             = [{ name = "lb1", ip = "10.0.0.5", priority = 100 }, { name = "lb2", ip = "10.0.0.6", priority = 100 }]
  vip               = "10.0.0.100"
  interface         = "eth0"
  virtual_router_id = 77
}
