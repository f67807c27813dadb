resource "kha_etcd_access" "test" {
  members = [
    { name = "m0", ip = "10.0.0.11", member_name = "etcd-a" },
    { name = "m1", ip = "10.0.0.12", access_ip = "192.0.2.12", etcd_access_address = "etcd-1.example.com" },
    { name = "m2", ip = "10.0.0.13" },
  ]
  mode           = "lb"
  lb             = { address = "2.3.7.9", domain_name = "etcd.example.com" }
  cert_alt_names = ["etcd.internal"]
  metrics_port   = 2382
}
