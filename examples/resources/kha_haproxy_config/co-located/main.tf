# w1 is a worker and also holds the VIP: its node-local HAProxy (kubespray's
# localhost load balancer) and the external one on the VIP run side by side.
# At their defaults both would be /etc/haproxy/haproxy.cfg under the
# haproxy service, which the plan refuses. The node-local one keeps the
# defaults, as on every other worker; the external one gets a config file
# and a systemd service of its own, haproxy@external.
resource "kha_cluster_endpoints" "cluster" {
  control_plane_nodes = [
    { name = "cp1", ip = "10.0.0.11" },
    { name = "cp2", ip = "10.0.0.12" },
    { name = "cp3", ip = "10.0.0.13" },
  ]
  worker_nodes = [for i in range(1, 4) : { name = "w${i}", ip = "10.0.0.2${i}" }]
  local_lb     = { enabled = true, type = "haproxy", healthcheck_port = 8081 } # on beside external_lb
  external_lb  = { address = "10.0.0.100", port = 8443, domain_name = "api.k8s.example.com" }
}

resource "kha_haproxy_config" "node_local" {
  listen           = kha_cluster_endpoints.cluster.local_lb_listen
  backends         = kha_cluster_endpoints.cluster.apiserver_backends
  healthcheck_port = 8081

  ssh = { host = "10.0.0.21", user = "admin", sudo = true }
}

resource "kha_haproxy_config" "external" {
  role             = "external"
  listen           = { address = "10.0.0.100", port = 8443 }
  backends         = kha_cluster_endpoints.cluster.apiserver_backends
  healthcheck_port = 8082 # its own: the node-local HAProxy answers 8081 on loopback, where keepalived asks
  proxy_timeouts   = { client = "1h", server = "1h" }

  # A file and a service of their own.
  config_path     = "/etc/kha/external-proxy.cfg"
  reload_command  = "systemctl enable haproxy@external && systemctl reload-or-restart haproxy@external"
  destroy_command = "systemctl disable --now haproxy@external"

  ssh = { host = "10.0.0.21", user = "admin", sudo = true }

  depends_on = [kha_file.haproxy_instance_unit]
}

# Debian and Ubuntu ship haproxy.service only: haproxy@NAME runs HAProxy on
# /etc/kha/NAME-proxy.cfg. The same unit runs kha_etcd_access's local proxy
# (haproxy@etcd).
resource "kha_file" "haproxy_instance_unit" {
  path             = "/etc/systemd/system/haproxy@.service"
  content          = <<-EOT
    [Unit]
    Description=HAProxy %i proxy (kha)
    After=network-online.target
    Wants=network-online.target

    [Service]
    Environment="CONFIG=/etc/kha/%i-proxy.cfg" "PIDFILE=/run/haproxy-%i.pid"
    ExecStartPre=/usr/sbin/haproxy -f $CONFIG -c -q
    ExecStart=/usr/sbin/haproxy -Ws -f $CONFIG -p $PIDFILE
    ExecReload=/usr/sbin/haproxy -f $CONFIG -c -q
    ExecReload=/bin/kill -USR2 $MAINPID
    KillMode=mixed
    Restart=always
    SuccessExitStatus=143
    Type=notify

    [Install]
    WantedBy=multi-user.target
  EOT
  validate_command = "d=$(mktemp -d) && cp %s \"$d/haproxy@.service\" && systemd-analyze verify \"$d/haproxy@external.service\"; rc=$?; rm -rf \"$d\"; exit $rc"
  reload_command   = "systemctl daemon-reload"
  destroy_command  = "systemctl daemon-reload"

  ssh = { host = "10.0.0.21", user = "admin", sudo = true }
}
