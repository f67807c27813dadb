output "api_endpoint" {
  description = "What clients outside the cluster use, e.g. in a DNS record or a cloud LB listener."
  value       = kha_cluster_endpoints.cluster.endpoints.external
}

output "kubeconfig_server" {
  description = "server: of an admin kubeconfig, without DNS."
  value       = kha_cluster_endpoints.cluster.kubeconfig_server
}

# A DNS record and a cloud load balancer could take these directly, e.g.:
#   resource "aws_route53_record" "api" { name = var.api_domain_name, records = [var.vip], ... }
#   resource "aws_lb_target_group_attachment" "cp" {
#     for_each = { for b in kha_cluster_endpoints.cluster.apiserver_backends : b.name => b }
#     target_id = each.value.address, port = each.value.port, ...
#   }
output "dns_record" {
  description = "The API name and the address it should resolve to."
  value       = { name = var.api_domain_name, address = var.vip }
}

output "apiserver_cert_sans" {
  value = kha_cluster_endpoints.cluster.apiserver_cert_sans
}

output "etcd_cert_sans" {
  value = kha_etcd_access.etcd.cert_sans
}

output "node_endpoints" {
  value = kha_cluster_endpoints.cluster.node_endpoints
}

output "kubeadm_cluster_configuration" {
  description = "The HA part of kubeadm's ClusterConfiguration, for `kubeadm init --config`."
  value       = kha_cluster_endpoints.cluster.kubeadm_cluster_configuration
}

output "kube_proxy_server" {
  description = "server: of kube-proxy's kubeconfig, the same on every node."
  value       = kha_cluster_endpoints.cluster.kube_proxy_server
}

# kube-proxy's kubeconfig lives in a ConfigMap that every node shares; the
# kubelets' kubeconfigs are kha_kubeconfig_server's, this one is the
# cluster's. After each apply that changes it:
#   kubectl -n kube-system patch configmap kube-proxy --type merge \
#     -p "$(terraform output -json kube_proxy_configmap_patch)"
#   kubectl -n kube-system rollout restart daemonset kube-proxy
output "kube_proxy_configmap_patch" {
  description = "A merge patch of the kube-proxy ConfigMap: kubeadm's kubeconfig.conf with the server every node can use."
  value = {
    data = {
      "kubeconfig.conf" = yamlencode({
        apiVersion = "v1"
        kind       = "Config"
        clusters = [{
          name    = "default"
          cluster = { certificate-authority = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt", server = kha_cluster_endpoints.cluster.kube_proxy_server }
        }]
        contexts        = [{ name = "default", context = { cluster = "default", namespace = "default", user = "default" } }]
        current-context = "default"
        users           = [{ name = "default", user = { tokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token" } }]
      })
    }
  }
}
