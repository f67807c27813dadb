resource "kha_etcd_access" "test" {
  members            = [{ name = "etcd1", ip = "10.0.0.11" }]
  mode               = "lb"
  lb                 = { address = "10.0.0.100" }
  existing_cert_sans = { ip_addresses = ["10.0.0.11", "127.0.0.1"] }
}
