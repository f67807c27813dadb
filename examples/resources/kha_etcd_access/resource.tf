# Stacked etcd on the three control-plane nodes; kube-apiserver gets every
# member (kubespray's default), and the certificates get the computed SANs.
resource "kha_etcd_access" "etcd" {
  members = [
    { name = "etcd1", ip = "10.0.0.11" },
    { name = "etcd2", ip = "10.0.0.12" },
    { name = "etcd3", ip = "10.0.0.13" },
  ]
}

# Worker nodes whose CNI takes a single endpoint: a local TCP proxy on
# 127.0.0.1:2379 to every member, kept in place over SSH. It runs as the
# systemd unit haproxy@etcd, beside the node's own HAProxy; destroy stops and
# disables it (the default destroy_command for this reload_command).
resource "kha_etcd_access" "worker_proxy" {
  members        = kha_etcd_access.etcd.members
  mode           = "local_proxy"
  reload_command = "systemctl enable haproxy@etcd && systemctl reload-or-restart haproxy@etcd"

  ssh = { host = "10.0.0.21", user = "admin", sudo = true }

  depends_on = [kha_file.haproxy_instance_unit]
}

# Debian and Ubuntu ship haproxy.service only: haproxy@NAME runs HAProxy on
# /etc/kha/NAME-proxy.cfg (the default proxy_config_path for NAME = etcd).
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
  validate_command = "d=$(mktemp -d) && cp %s \"$d/haproxy@.service\" && systemd-analyze verify \"$d/haproxy@etcd.service\"; rc=$?; rm -rf \"$d\"; exit $rc"
  reload_command   = "systemctl daemon-reload"
  destroy_command  = "systemctl daemon-reload"

  ssh = { host = "10.0.0.21", user = "admin", sudo = true }
}

output "etcd_servers" {
  value = kha_etcd_access.etcd.etcd_servers # "https://10.0.0.11:2379,https://10.0.0.12:2379,https://10.0.0.13:2379"
}

output "etcd_cert_sans" {
  value = kha_etcd_access.etcd.cert_sans
}
