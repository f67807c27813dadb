resource "kha_hosts_entries" "x" {
  entries = ["10.0.0.1 ok", "api.example.com 10.0.0.1"]
}
