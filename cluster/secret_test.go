package cluster

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// TestSecretGuardsTheRoutes: with the cluster's secret, the embedded
// server asks it of the routes that connect to it, gives it on the routes
// it makes, and asks it of clients as their token; without it, neither.
func TestSecretGuardsTheRoutes(t *testing.T) {
	cfg := &Config{Name: "a", Dir: t.TempDir(), ClusterName: "cd", Listen: "127.0.0.1:6222", Routes: []string{"127.0.0.1:6223", "nats-route://ops:pw@127.0.0.1:6224"}, Secret: "s3cret"}
	so, err := serverOptions(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if so.Cluster.Username != routeUser || so.Cluster.Password != "s3cret" || so.Authorization != "s3cret" {
		t.Errorf("route authorization %q/%q, client token %q", so.Cluster.Username, so.Cluster.Password, so.Authorization)
	}
	if pw, _ := so.Routes[0].User.Password(); so.Routes[0].User.Username() != routeUser || pw != "s3cret" {
		t.Errorf("route %s does not give the secret", so.Routes[0].Redacted())
	}
	if so.Routes[1].User.Username() != "ops" {
		t.Errorf("route %s: credentials given in the route were replaced", so.Routes[1].Redacted())
	}
	cfg.Secret = ""
	if so, err = serverOptions(cfg); err != nil || so.Cluster.Password != "" || so.Authorization != "" || so.Routes[0].User != nil {
		t.Errorf("without a secret: %+v, %v", so.Cluster, err)
	}
	if got := redact("nats://tok@127.0.0.1:4222,nats://u:p@10.0.0.2:4222"); strings.Contains(got, "tok") || strings.Contains(got, "p@") {
		t.Errorf("redacted URLs: %s", got)
	}
}

// TestSecretGuardsTheClientPort: a node's client port with the secret set
// refuses a client without it, and takes one that gives it (in its URL, or
// as a node's Secret).
func TestSecretGuardsTheClientPort(t *testing.T) {
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	a, err := Dial(ctx, Config{Name: "a", Dir: t.TempDir(), Client: addr, Secret: "s3cret", Shards: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if c, err := Connect(cctx, "nats://"+addr, ""); err == nil {
		c.Close()
		t.Error("a client without the secret was taken")
	} else if !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Errorf("a client without the secret: %v", err)
	}
	c, err := Connect(cctx, "nats://s3cret@"+addr, "")
	if err != nil {
		t.Fatalf("a client with the secret in its URL: %v", err)
	}
	c.Close()
	if c, err = Connect(cctx, "nats://"+addr, "s3cret"); err != nil {
		t.Fatalf("a client given the secret: %v", err)
	}
	c.Close()
	if _, err := Dial(cctx, Config{Name: "b", URL: "nats://" + addr, Secret: "wrong"}); err == nil {
		t.Error("a node with another secret was taken")
	} else if strings.Contains(err.Error(), "wrong") {
		t.Errorf("the error shows the secret: %v", err)
	}
	b, err := Dial(cctx, Config{Name: "b", URL: "nats://" + addr, Secret: "s3cret"})
	if err != nil {
		t.Fatalf("a node with the secret: %v", err)
	}
	b.Close()
}
