package crawl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"syscall"
)

// nonPublic lists the address blocks a fetch must not reach unless
// AllowPrivate is set: everything that is not a globally routed unicast
// address (RFC 6890 special-purpose registries, trimmed to what matters).
var nonPublic = func() []netip.Prefix {
	var ps []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8",       // "this network", incl. the unspecified address
		"10.0.0.0/8",      // private
		"100.64.0.0/10",   // carrier-grade NAT
		"127.0.0.0/8",     // loopback
		"169.254.0.0/16",  // link-local (cloud metadata lives here)
		"172.16.0.0/12",   // private
		"192.0.0.0/24",    // IETF protocol assignments
		"192.0.2.0/24",    // documentation
		"192.88.99.0/24",  // 6to4 relay anycast (deprecated)
		"192.168.0.0/16",  // private
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // documentation
		"203.0.113.0/24",  // documentation
		"224.0.0.0/4",     // multicast
		"240.0.0.0/4",     // reserved, incl. broadcast
		"::/96",           // unspecified, loopback, IPv4-compatible (deprecated)
		"100::/64",        // discard-only
		"2001:db8::/32",   // documentation
		"fc00::/7",        // unique local (ULA)
		"fe80::/10",       // link-local
		"fec0::/10",       // site-local (deprecated)
		"ff00::/8",        // multicast
		"2001::/32",       // Teredo: the embedded address cannot be checked
		"2001:10::/28",    // ORCHID
		"2001:20::/28",    // ORCHIDv2
		"64:ff9b:1::/48",  // local-use NAT64
		"::ffff:0:0:0/96", // SIIT translated addresses
		"100:0:0:1::/64",  // dummy prefix
		"3fff::/20",       // documentation (RFC 9637)
		"5f00::/16",       // segment routing SIDs
		"2001:2::/48",     // benchmarking
	} {
		ps = append(ps, netip.MustParsePrefix(s))
	}
	return ps
}()

var (
	sixToFour = netip.MustParsePrefix("2002::/16")
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
)

// IsPublic reports whether a is a globally routed unicast address a fetch
// may connect to. IPv4-mapped IPv6 addresses are judged by their IPv4
// address; 6to4 and NAT64 addresses by the IPv4 address they embed.
func IsPublic(a netip.Addr) bool {
	a = a.Unmap().WithZone("")
	if !a.IsValid() {
		return false
	}
	if a.Is6() {
		var v4 [4]byte
		b := a.As16()
		switch {
		case sixToFour.Contains(a):
			copy(v4[:], b[2:6])
			return IsPublic(netip.AddrFrom4(v4))
		case nat64.Contains(a):
			copy(v4[:], b[12:16])
			return IsPublic(netip.AddrFrom4(v4))
		}
	}
	for _, p := range nonPublic {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// Resolver looks host names up; *net.Resolver satisfies it. Tests put a
// fake in Fetcher.Resolver to point names at loopback servers.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// dialContext resolves the host itself, refuses non-public addresses
// unless AllowPrivate is set, and connects to the checked IP literal, so
// no second lookup (DNS rebinding) can swap the address. The dialer's
// Control hook checks the address once more right before connect(2).
// It runs for every connection, hence for every redirect hop.
func (f *Fetcher) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%w: bad address %q: %w", ErrConnect, addr, err)
	}
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{ip}
	} else {
		addrs, err = f.resolver().LookupNetIP(ctx, "ip", host)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			var de *net.DNSError
			if errors.As(err, &de) && de.IsTimeout {
				return nil, fmt.Errorf("%w: resolving %s: %w", ErrTimeout, host, err)
			}
			return nil, fmt.Errorf("%w: %s: %w", ErrDNS, host, err)
		}
		if len(addrs) == 0 {
			return nil, fmt.Errorf("%w: %s has no address", ErrDNS, host)
		}
	}
	portNum, _ := strconv.ParseUint(port, 10, 16)
	var allowed []netip.Addr
	for _, a := range addrs {
		if f.allowed(netip.AddrPortFrom(a, uint16(portNum))) {
			allowed = append(allowed, a)
		}
	}
	if len(allowed) == 0 {
		if len(addrs) == 1 && addrs[0].String() == host {
			return nil, fmt.Errorf("%w %s", ErrPrivateAddress, host)
		}
		return nil, fmt.Errorf("%w: %s resolves to %s", ErrPrivateAddress, host, addrs[0].Unmap())
	}
	d := &net.Dialer{
		Timeout:   f.DialTimeout,
		KeepAlive: f.KeepAlive,
		Control:   f.control,
	}
	var first error
	for _, a := range allowed {
		conn, err := d.DialContext(ctx, network, net.JoinHostPort(a.Unmap().String(), port))
		if err == nil {
			return conn, nil
		}
		if first == nil {
			first = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, first
}

// control refuses a socket whose remote address is not allowed.
func (f *Fetcher) control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot check address %q", ErrPrivateAddress, address)
	}
	if !f.allowed(ap) {
		return fmt.Errorf("%w: %s", ErrPrivateAddress, ap.Addr().Unmap())
	}
	return nil
}

// allowed reports whether a connection to ap may be made: a public
// address, any address with AllowPrivate, or one listed in Allow.
func (f *Fetcher) allowed(ap netip.AddrPort) bool {
	a := ap.Addr().Unmap()
	for _, x := range f.Allow {
		if x.Addr().Unmap() == a && x.Port() == ap.Port() {
			return true
		}
	}
	if f.allowAddr != nil {
		return f.allowAddr(a)
	}
	return f.AllowPrivate || IsPublic(a)
}

func (f *Fetcher) resolver() Resolver {
	if f.Resolver != nil {
		return f.Resolver
	}
	return net.DefaultResolver
}

// DialContext connects as the fetcher does: it resolves the host itself
// and refuses addresses the fetcher may not reach (ErrPrivateAddress),
// unless AllowPrivate is set or the address is listed in Allow. Other
// clients that fetch on a watch's behalf, such as the browser's proxy,
// dial through it so one policy guards every request.
func (f *Fetcher) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return f.dialContext(ctx, network, addr)
}
