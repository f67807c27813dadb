# shellcheck shell=bash
# lib.sh: shell helpers shared by demo.sh and test/e2e; source it from the
# project root.

# dev_provider DIR: build the provider into DIR/bin and point the CLI at it
# through a dev_overrides config, DIR/cli.tfrc (no registry, no init).
dev_provider() {
  go build -o "$1/bin/terraform-provider-kha" .
  printf 'provider_installation {\n  dev_overrides {\n    "kha/kha" = "%s"\n  }\n  direct {}\n}\n' "$1/bin" > "$1/cli.tfrc"
  export TF_CLI_CONFIG_FILE=$1/cli.tfrc TF_IN_AUTOMATION=1
}

# sshd_files DIR ADDRESS PORT CLIENT_PUBKEY [CONFIG]: host keys of the three
# types a Debian server has (RSA, ECDSA, Ed25519), authorized_keys and a
# checked sshd_config in DIR for a throwaway key-only sshd, with the lines
# CONFIG added.
sshd_files() {
  local d=$1 t
  for t in rsa ecdsa ed25519; do
    [ -f "$d/host_$t" ] || ssh-keygen -q -t "$t" -N '' -C kha-test-host -f "$d/host_$t"
  done
  cp "$4" "$d/authorized_keys" && chmod 644 "$d/authorized_keys"
  cat > "$d/sshd_config" <<CFG
Port $3
ListenAddress $2
HostKey $d/host_rsa
HostKey $d/host_ecdsa
HostKey $d/host_ed25519
PidFile $d/sshd.pid
AuthorizedKeysFile $d/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
UseDNS no
MaxStartups 100:30:200
${5:-}
CFG
  install -d -m 0755 /run/sshd
  /usr/sbin/sshd -t -f "$d/sshd_config"
}

# known_hosts_lines DIR NAME: the known_hosts lines of sshd_files' host
# keys for NAME (an address, or [address]:port), as ssh-keyscan prints them.
known_hosts_lines() {
  local t
  for t in rsa ecdsa ed25519; do echo "$2 $(cut -d' ' -f1,2 "$1/host_$t.pub")"; done
}

# new_ca DIR CN: DIR/ca.key and DIR/ca.crt, a P-256 CA valid for ten years,
# as kubeadm's (the certificates it signs last two days).
new_ca() {
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$1/ca.key" -out "$1/ca.crt" \
    -days 3650 -subj "/CN=$2" -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign 2>/dev/null
}

# issue_cert DIR NAME CN SANS EKU [ORG]: DIR/NAME.key and DIR/NAME.crt,
# signed by DIR's CA.
issue_cert() {
  local d=$1
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$d/$2.key" -out "$d/$2.csr" \
    -subj "/CN=$3${6:+/O=$6}" 2>/dev/null
  openssl x509 -req -in "$d/$2.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial -out "$d/$2.crt" -days 2 \
    -extfile <(printf 'subjectAltName=%s\nextendedKeyUsage=%s\n' "$4" "$5") 2>/dev/null
}

# wait_port ADDRESS PORT: wait up to 10 s for something to accept there.
wait_port() {
  for _ in $(seq 1 200); do (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null && return 0; sleep 0.05; done
  echo "nothing listens on $1:$2" >&2; return 1
}
