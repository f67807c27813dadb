package endpoints

import (
	"reflect"
	"strings"
	"testing"
)

var etcdMembers = []EtcdMember{
	{Name: "etcd1", IP: "10.0.0.11"},
	{Name: "etcd2", IP: "10.0.0.12", AccessIP: "192.0.2.12"},
	{Name: "etcd3", IP: "10.0.0.13"},
}

func TestComputeEtcd(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name           string
		in             EtcdInput
		servers        []string
		single         string
		proxy          *Listen
		dns, ips       []string
		initialCluster string
	}{
		{
			name:           "direct: every client gets every member (kubespray default)",
			in:             EtcdInput{Members: etcdMembers},
			servers:        []string{"https://10.0.0.11:2379", "https://192.0.2.12:2379", "https://10.0.0.13:2379"},
			single:         "https://10.0.0.11:2379",
			dns:            []string{"localhost", "etcd1", "etcd2", "etcd3", "etcd.kube-system.svc.cluster.local", "etcd.kube-system.svc", "etcd.kube-system", "etcd"},
			ips:            []string{"10.0.0.11", "192.0.2.12", "10.0.0.12", "10.0.0.13", "127.0.0.1", "::1"},
			initialCluster: "etcd1=https://10.0.0.11:2380,etcd2=https://192.0.2.12:2380,etcd3=https://10.0.0.13:2380",
		},
		{
			name:           "local proxy on loopback",
			in:             EtcdInput{Members: etcdMembers, Mode: EtcdLocalProxy, LocalProxyPort: 12379, DNSDomain: "corp.internal"},
			servers:        []string{"https://127.0.0.1:12379"},
			single:         "https://127.0.0.1:12379",
			proxy:          &Listen{Address: "127.0.0.1", Port: 12379},
			dns:            []string{"localhost", "etcd1", "etcd2", "etcd3", "etcd.kube-system.svc.corp.internal", "etcd.kube-system.svc", "etcd.kube-system", "etcd"},
			ips:            []string{"10.0.0.11", "192.0.2.12", "10.0.0.12", "10.0.0.13", "127.0.0.1", "::1"},
			initialCluster: "etcd1=https://10.0.0.11:2380,etcd2=https://192.0.2.12:2380,etcd3=https://10.0.0.13:2380",
		},
		{
			name: "lb: FQDN and VIP are in the certificate",
			in: EtcdInput{Members: etcdMembers, Mode: EtcdLB, LB: &EtcdLBSpec{Address: "2.3.7.9", DomainName: "etcd.example.com"},
				CertAltIPs: []string{"10.0.0.11", "203.0.113.9"}},
			servers:        []string{"https://etcd.example.com:2379"},
			single:         "https://etcd.example.com:2379",
			dns:            []string{"localhost", "etcd1", "etcd2", "etcd3", "etcd.kube-system.svc.cluster.local", "etcd.kube-system.svc", "etcd.kube-system", "etcd", "etcd.example.com"},
			ips:            []string{"2.3.7.9", "10.0.0.11", "192.0.2.12", "10.0.0.12", "10.0.0.13", "203.0.113.9", "127.0.0.1", "::1"},
			initialCluster: "etcd1=https://10.0.0.11:2380,etcd2=https://192.0.2.12:2380,etcd3=https://10.0.0.13:2380",
		},
		{
			name:           "IPv6 members are bracketed",
			in:             EtcdInput{IPFamily: IPv6, Members: []EtcdMember{{Name: "e1", IP6: "fd00::11", ClientPort: 3379, PeerPort: 3380}}},
			servers:        []string{"https://[fd00::11]:3379"},
			single:         "https://[fd00::11]:3379",
			dns:            []string{"localhost", "e1", "etcd.kube-system.svc.cluster.local", "etcd.kube-system.svc", "etcd.kube-system", "etcd"},
			ips:            []string{"fd00::11", "127.0.0.1", "::1"},
			initialCluster: "etcd1=https://[fd00::11]:3380",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, ps := ComputeEtcd(tc.in)
			if len(ps) != 0 {
				t.Fatal(ps)
			}
			if !reflect.DeepEqual(r.Servers, tc.servers) || r.SingleEndpoint != tc.single {
				t.Errorf("servers = %q single = %q, want %q %q", r.Servers, r.SingleEndpoint, tc.servers, tc.single)
			}
			if !reflect.DeepEqual(r.ProxyListen, tc.proxy) {
				t.Errorf("proxy listen = %+v, want %+v", r.ProxyListen, tc.proxy)
			}
			if (tc.proxy != nil) != (len(r.ProxyBackends) == len(tc.in.Members)) {
				t.Errorf("proxy backends = %+v", r.ProxyBackends)
			}
			if !reflect.DeepEqual(r.CertSANs.DNSNames, tc.dns) || !reflect.DeepEqual(r.CertSANs.IPAddresses, tc.ips) {
				t.Errorf("SANs = %q %q\nwant   %q %q", r.CertSANs.DNSNames, r.CertSANs.IPAddresses, tc.dns, tc.ips)
			}
			if r.InitialCluster != tc.initialCluster {
				t.Errorf("initial cluster = %q, want %q", r.InitialCluster, tc.initialCluster)
			}
			for _, u := range append(r.Servers, r.AccessAddresses...) {
				if !r.CertSANs.Covers(hostOfURL(u)) {
					t.Errorf("%s not covered", u)
				}
			}
		})
	}
}

func TestComputeEtcdListenURLs(t *testing.T) {
	t.Parallel()
	r, ps := ComputeEtcd(EtcdInput{IPFamily: IPv6, Members: []EtcdMember{{Name: "e1", IP6: "fd00::11", AccessIP6: "2001:db8::11"}, {Name: "e2", IP6: "fd00::12"}}})
	if len(ps) != 0 {
		t.Fatal(ps)
	}
	// kubespray listens on 127.0.0.1 in IPv6-only clusters too.
	want := []NodeEndpoint{{"e1", "https://[fd00::11]:2379,https://127.0.0.1:2379"}, {"e2", "https://[fd00::12]:2379,https://127.0.0.1:2379"}}
	if !reflect.DeepEqual(r.ListenClientURLs, want) {
		t.Errorf("listen = %+v", r.ListenClientURLs)
	}
}

func TestComputeEtcdProblems(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, path, substr string
		in                 EtcdInput
	}{
		{"no members", "members", "at least one", EtcdInput{}},
		{"duplicate name", "members[1].name", "already used", EtcdInput{Members: []EtcdMember{{Name: "e1", IP: "10.0.0.1"}, {Name: "e1", IP: "10.0.0.2"}}}},
		{"duplicate client URL", "members[1].access_ip", "already used", EtcdInput{Members: []EtcdMember{{Name: "e1", IP: "10.0.0.1"}, {Name: "e2", IP: "10.0.0.2", AccessIP: "10.0.0.1"}}}},
		{"bad ip", "members[0].ip", "not an IP address", EtcdInput{Members: []EtcdMember{{Name: "e1", IP: "x"}}}},
		{"broadcast ip", "members[0].ip", "broadcast", EtcdInput{Members: []EtcdMember{{Name: "e1", IP: "255.255.255.255"}}}},
		{"broadcast access address", "members[0].etcd_access_address", "broadcast", EtcdInput{Members: []EtcdMember{{Name: "e1", IP: "10.0.0.1", AccessAddress: "255.255.255.255"}}}},
		{"multicast ip", "members[0].ip", "multicast", EtcdInput{Members: []EtcdMember{{Name: "e1", IP: "224.0.0.18"}}}},
		{"garbage access address", "members[0].etcd_access_address", "neither an IP address nor a DNS name", EtcdInput{Members: []EtcdMember{{Name: "e1", IP: "10.0.0.1", AccessAddress: "etcd 1!"}}}},
		{"duplicate member name", "members[1].member_name", "already used", EtcdInput{Members: []EtcdMember{{Name: "e1", IP: "10.0.0.1", MemberName: "a"}, {Name: "e2", IP: "10.0.0.2", MemberName: "a"}}}},
		{"IPv4 ip6", "members[0].ip6", "not an IPv6 address", EtcdInput{IPFamily: DualStack, Members: []EtcdMember{{Name: "e1", IP: "10.0.0.1", IP6: "10.0.0.2"}}}},
		{"IPv6-only without an address", "members[0].ip", "must be set", EtcdInput{IPFamily: IPv6, Members: []EtcdMember{{Name: "e1"}}}},
		{"same ports", "members[0].peer_port", "two ports", EtcdInput{Members: []EtcdMember{{Name: "e1", IP: "10.0.0.1", ClientPort: 2379, PeerPort: 2379}}}},
		{"lb mode without lb", "lb", "needs lb", EtcdInput{Members: etcdMembers, Mode: EtcdLB}},
		{"lb without lb mode", "lb", "set mode", EtcdInput{Members: etcdMembers, LB: &EtcdLBSpec{Address: "10.0.0.100"}}},
		{"bad mode", "mode", "local_proxy", EtcdInput{Members: etcdMembers, Mode: "proxy"}},
		{"bad alt ip", "cert_alt_ips[0]", "not an IP", EtcdInput{Members: etcdMembers, CertAltIPs: []string{"etcd.example.com"}}},
		{"existing cert lacks the VIP", "existing_cert_sans", "not 10.0.0.100", EtcdInput{Members: etcdMembers, Mode: EtcdLB,
			LB: &EtcdLBSpec{Address: "10.0.0.100"}, ExistingCertSANs: &SANs{IPAddresses: []string{"10.0.0.11", "192.0.2.12", "10.0.0.13"}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, ps := ComputeEtcd(tc.in)
			for _, p := range ps {
				if p.Path.String() == tc.path && strings.Contains(p.Detail, tc.substr) {
					return
				}
			}
			t.Errorf("want a problem at %s mentioning %q, got %v", tc.path, tc.substr, ps)
		})
	}
}

func FuzzComputeEtcd(f *testing.F) {
	f.Add("e1,e2,e3", "10.0.0.1,10.0.0.2,10.0.0.3", "", 2379, 2380, uint8(0), "", "", 0)
	f.Add("e1", "fd00::1", "fd00::9", 1, 2, uint8(1), "", "", 0)
	f.Add("a,b", "10.0.0.1,10.0.0.2", "", 0, 0, uint8(2), "10.9.9.9", "etcd.example.com", 443)
	f.Fuzz(func(t *testing.T, names, ips, access string, clientPort, peerPort int, mode uint8, lbAddr, lbName string, lbPort int) {
		in := EtcdInput{Mode: []EtcdMode{"", EtcdDirect, EtcdLocalProxy, EtcdLB, "x"}[mode%5]}
		for i, n := range strings.Split(names, ",") {
			m := EtcdMember{Name: n, ClientPort: clientPort, PeerPort: peerPort}
			if parts := strings.Split(ips, ","); i < len(parts) {
				m.IP = parts[i]
			}
			if i == 0 {
				m.AccessIP = access
			}
			in.Members = append(in.Members, m)
		}
		if lbAddr != "" {
			in.LB = &EtcdLBSpec{Address: lbAddr, DomainName: lbName, Port: lbPort}
		}
		r, ps := ComputeEtcd(in)
		for _, p := range ps {
			if strings.Contains(p.Detail, "always a bug") {
				t.Fatal(p)
			}
		}
		if ps.HasErrors() {
			return
		}
		if len(r.Servers) == 0 || r.SingleEndpoint != r.Servers[0] || len(r.ClientURLs) != len(in.Members) {
			t.Fatalf("incomplete result %+v", r)
		}
		for _, u := range append(r.Servers, r.AccessAddresses...) {
			if !r.CertSANs.Covers(hostOfURL(u)) {
				t.Fatalf("%s not covered by %+v", u, r.CertSANs)
			}
		}
	})
}
