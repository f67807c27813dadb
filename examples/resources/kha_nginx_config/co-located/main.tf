# w1 is a worker and also holds the VIP: its node-local nginx (kubespray's
# localhost load balancer) and the external one on the VIP run side by side.
# At their defaults both would be /etc/nginx/nginx.conf under the nginx
# service, which the plan refuses. The node-local one keeps the defaults, as
# on every other worker; the external one gets a config file, a PID file and
# a systemd service of its own, nginx@external.
resource "kha_cluster_endpoints" "cluster" {
  control_plane_nodes = [
    { name = "cp1", ip = "10.0.0.11" },
    { name = "cp2", ip = "10.0.0.12" },
    { name = "cp3", ip = "10.0.0.13" },
  ]
  worker_nodes = [for i in range(1, 4) : { name = "w${i}", ip = "10.0.0.2${i}" }]
  local_lb     = { enabled = true, type = "nginx", healthcheck_port = 8081 } # on beside external_lb
  external_lb  = { address = "10.0.0.100", port = 8443, domain_name = "api.k8s.example.com" }
}

resource "kha_nginx_config" "node_local" {
  listen           = kha_cluster_endpoints.cluster.local_lb_listen
  backends         = kha_cluster_endpoints.cluster.apiserver_backends
  healthcheck_port = 8081

  ssh = { host = "10.0.0.21", user = "admin", sudo = true }
}

resource "kha_nginx_config" "external" {
  role             = "external"
  listen           = { address = "10.0.0.100", port = 8443 }
  backends         = kha_cluster_endpoints.cluster.apiserver_backends
  healthcheck_port = 8082 # its own: the node-local nginx answers 8081 on loopback, where keepalived asks

  # A file, a PID file and a service of their own.
  config_path     = "/etc/kha/external-proxy.conf"
  pid_file        = "/run/nginx-external.pid"
  reload_command  = "systemctl enable nginx@external && systemctl reload-or-restart nginx@external"
  destroy_command = "systemctl disable --now nginx@external"

  ssh = { host = "10.0.0.21", user = "admin", sudo = true }

  depends_on = [kha_file.nginx_instance_unit]
}

# Debian and Ubuntu ship nginx.service only: nginx@NAME runs nginx on
# /etc/kha/NAME-proxy.conf, whose pid_file must be /run/nginx-NAME.pid.
resource "kha_file" "nginx_instance_unit" {
  path             = "/etc/systemd/system/nginx@.service"
  content          = <<-EOT
    [Unit]
    Description=nginx %i proxy (kha)
    After=network-online.target
    Wants=network-online.target

    [Service]
    Type=forking
    Environment="CONFIG=/etc/kha/%i-proxy.conf"
    PIDFile=/run/nginx-%i.pid
    ExecStartPre=/usr/sbin/nginx -t -q -c $CONFIG
    ExecStart=/usr/sbin/nginx -c $CONFIG
    ExecReload=/usr/sbin/nginx -t -q -c $CONFIG
    ExecReload=/usr/sbin/nginx -c $CONFIG -s reload
    ExecStop=-/sbin/start-stop-daemon --quiet --stop --retry QUIT/5 --pidfile /run/nginx-%i.pid
    TimeoutStopSec=5
    KillMode=mixed

    [Install]
    WantedBy=multi-user.target
  EOT
  validate_command = "d=$(mktemp -d) && cp %s \"$d/nginx@.service\" && systemd-analyze verify \"$d/nginx@external.service\"; rc=$?; rm -rf \"$d\"; exit $rc"
  reload_command   = "systemctl daemon-reload"
  destroy_command  = "systemctl daemon-reload"

  ssh = { host = "10.0.0.21", user = "admin", sudo = true }
}
