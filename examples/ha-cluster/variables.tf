variable "control_plane_nodes" {
  description = "Control-plane nodes (kube-apiserver and a stacked etcd member each), first one first, the node-local load balancer each runs in `every_node` mode, and `draining = true` on a node on its way out (the first of the two applies that remove it)."
  type        = list(object({ name = string, ip = string, local_lb = optional(string, "haproxy"), draining = optional(bool, false) }))
}

variable "worker_nodes" {
  description = "Worker nodes and the node-local load balancer each runs (haproxy or nginx)."
  type        = list(object({ name = string, ip = string, local_lb = optional(string, "haproxy") }))
  validation {
    condition     = alltrue([for n in concat(var.control_plane_nodes, var.worker_nodes) : contains(["haproxy", "nginx"], n.local_lb)])
    error_message = "local_lb must be \"haproxy\" or \"nginx\"."
  }
}

variable "access_mode" {
  description = "How nodes reach the apiservers: `direct`, `local_lb` (with the VIP for outside clients) or `every_node` (with the VIP)."
  type        = string
  default     = "local_lb"
  validation {
    condition     = contains(["direct", "local_lb", "every_node"], var.access_mode)
    error_message = "access_mode must be \"direct\", \"local_lb\" or \"every_node\"."
  }
}

variable "every_node_port" {
  description = "Port of the node-local load balancers in `every_node` mode (Epiphany uses 3446): not the apiserver port, which kube-apiserver binds on every address of the control-plane nodes."
  type        = number
  default     = 7445
}

variable "lb_nodes" {
  description = "Nodes of the external load balancer pair; the highest priority holds the VIP while healthy."
  type        = list(object({ name = string, ip = string, priority = number }))
}

variable "vip" {
  description = "VIP of the external load balancer."
  type        = string
}

variable "vip_prefix" {
  description = "Prefix length of the VIP's subnet."
  type        = number
  default     = 24
}

variable "vip_port" {
  description = "Port of the external load balancer; not the apiservers' own port, which they bind on every address."
  type        = number
  default     = 8443
}

variable "api_domain_name" {
  description = "DNS name of the API for clients outside the cluster."
  type        = string
  default     = "api.k8s.example.com"
}

variable "dns" {
  description = "The DNS server that holds `api_domain_name`'s zone, for an A record that follows the VIP (dns.tf): its address, a BIND key file (`tsig-keygen`) on the machine that runs Terraform, and the record's TTL in seconds. Null: no record."
  type = object({
    server   = string
    key_file = string
    ttl      = optional(number, 30)
  })
  default = null
  validation {
    condition     = var.dns == null ? true : can(regex("^[0-9a-fA-F.:]+$", var.dns.server)) && var.dns.ttl >= 0
    error_message = "dns.server must be an IP address and dns.ttl a number of seconds."
  }
}

variable "extra_cert_sans" {
  description = "More names and addresses clients use, added to the apiserver certificate."
  type        = list(string)
  default     = []
}

variable "lb_interface" {
  description = "Interface of the load balancer nodes that carries the VIP."
  type        = string
  default     = "eth0"
}

variable "lb_healthcheck_port" {
  description = "Health endpoint of the external HAProxy, tracked by keepalived."
  type        = number
  default     = 8081
}

variable "ca_file" {
  description = "Cluster CA on the nodes, for HAProxy's health checks of the apiservers."
  type        = string
  default     = "/etc/kubernetes/pki/ca.crt"
}

variable "config_dir" {
  description = "Directory on the nodes for the rendered configurations."
  type        = string
  default     = "/etc/kha"
}

variable "kubernetes_version" {
  description = "Kubernetes release, for kubeadm's configuration; before v1.33, control-plane kubelets go through the load balancer in `every_node` mode, as that kubeadm wrote them."
  type        = string
  default     = "v1.36.3"
}

variable "hosts_file" {
  description = "The hosts file the API name goes into."
  type        = string
  default     = "/etc/hosts"
}

variable "kubeconfig_paths" {
  description = "Kubeconfigs on every node to point at its endpoint."
  type        = list(string)
  default     = ["/etc/kubernetes/kubelet.conf"]
}

variable "external_kubeconfig_paths" {
  description = "Kubeconfigs on the first control-plane node for clients outside the cluster (kubeadm's admin.conf on a cluster with a VIP), pointed at the external endpoint."
  type        = list(string)
  default     = []
}

variable "apiserver_certificate_path" {
  description = "The apiserver certificate on the first control-plane node; the plan checks every endpoint against it. null skips the check (a cluster that does not run yet)."
  type        = string
  default     = "/etc/kubernetes/pki/apiserver.crt"
}

variable "pki_dir" {
  description = "kubeadm's PKI on every control-plane node. Set, kha re-issues each node's apiserver serving certificate with the plan's SANs, one node at a time, before any client is pointed at a new name; the plan then no longer checks against the live certificate (apiserver_certificate_path)."
  type        = string
  default     = null
}

variable "certificate_renew_before" {
  description = "With pki_dir: re-issue an apiserver serving certificate that ends within this long (e.g. \"720h\"). null: 30 days, or a third of the certificate's validity when shorter."
  type        = string
  default     = null
}

variable "certificate_validity" {
  description = "With pki_dir: how long a re-issued apiserver serving certificate is valid (e.g. \"8760h\"). null: as long as the one it replaces."
  type        = string
  default     = null
}

variable "admin_kubeconfig_path" {
  description = "The admin kubeconfig on the first control-plane node. Set, kha points the cluster's own copies of the endpoint at the new one (kubeadm-config, cluster-info, kube-proxy's kubeconfig) once every node has moved."
  type        = string
  default     = null
}

variable "commands" {
  description = "How the nodes start, reload and stop each service; systemd units by default."
  type = object({
    haproxy_local_reload = string
    haproxy_local_stop   = string
    haproxy_vip_reload   = string
    haproxy_vip_stop     = string
    nginx_reload         = string
    nginx_stop           = string
    keepalived_reload    = string
    keepalived_stop      = string
    kubelet_restart      = string
  })
  default = {
    haproxy_local_reload = "systemctl reload-or-restart haproxy@local"
    haproxy_local_stop   = "systemctl stop haproxy@local"
    haproxy_vip_reload   = "systemctl reload-or-restart haproxy@vip"
    haproxy_vip_stop     = "systemctl stop haproxy@vip"
    nginx_reload         = "systemctl reload-or-restart nginx"
    nginx_stop           = "systemctl stop nginx"
    keepalived_reload    = "systemctl reload-or-restart keepalived"
    keepalived_stop      = "systemctl stop keepalived"
    kubelet_restart      = "systemctl restart kubelet"
  }
}

variable "ssh_user" {
  description = "Login user on every node; a non-root user needs passwordless sudo."
  type        = string
  default     = "root"
}

variable "ssh_private_key_file" {
  description = "Private key for every node (provider configuration: never stored in state)."
  type        = string
}

variable "ssh_known_hosts_file" {
  description = "known_hosts with every node's host key."
  type        = string
}
