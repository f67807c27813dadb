resource "kha_etcd_access" "test" {
  members = [
    { name = "etcd1", ip = "10.0.0.11" },
    { name = "etcd2", ip = "10.0.0.12", access_ip = "192.0.2.12" },
    { name = "etcd3", ip = "10.0.0.13" },
  ]
  mode           = "lb"
  lb             = { address = "2.3.7.9", domain_name = "etcd.example.com" }
  cert_alt_names = ["etcd.internal"]
}
