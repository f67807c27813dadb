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
#     for_each = { for b in kha_cluster_endpoints.cluster.local_lb_backends : b.name => b }
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
  description = "The HA part of kubeadm's ClusterConfiguration."
  value = yamlencode({
    apiVersion           = "kubeadm.k8s.io/v1beta4"
    kind                 = "ClusterConfiguration"
    controlPlaneEndpoint = kha_cluster_endpoints.cluster.kubeadm_control_plane_endpoint
    apiServer = {
      certSANs = concat(kha_cluster_endpoints.cluster.apiserver_cert_sans.dns_names, kha_cluster_endpoints.cluster.apiserver_cert_sans.ip_addresses)
    }
    etcd = {
      external = {
        endpoints = kha_etcd_access.etcd.servers
        caFile    = "/etc/ssl/etcd/ssl/ca.pem"
        certFile  = "/etc/ssl/etcd/ssl/node.pem"
        keyFile   = "/etc/ssl/etcd/ssl/node-key.pem"
      }
    }
  })
}
