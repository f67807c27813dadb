output "apiserver_url" {
  value = provider::kha::endpoint_url("fd00:10::11", 6443) # "https://[fd00:10::11]:6443"
}
