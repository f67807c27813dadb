output "cilium_k8s_service_host" {
  value = provider::kha::pod_endpoint("https://[fd00::100]:8443").host # "fd00::100"
}
