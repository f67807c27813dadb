variable "path" {
  type = string
}

resource "kha_keepalived_config" "x" {
  node              = "lb1"
  nodes             = [{ name = "lb1", ip = "10.0.0.5", priority = 100 }, { name = "lb2", ip = "10.0.0.6", priority = 90 }]
  vip               = "10.0.0.100"
  interface         = "eth0"
  virtual_router_id = 77
  config_path       = var.path
  ssh               = { host = "192.0.2.1", host_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGtoYS1wcm9iZS1rZXktb2Ytbm8taG9zdC1hdC1hbGwh", agent = true }
}
