package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/changedigest/changedigest/cluster"
	"github.com/changedigest/changedigest/pet"
)

func init() {
	commands["repair"] = command{summary: "check a stopped store and rebuild what can be rebuilt: repair [--check] [--index]", run: runRepair}
}

// runRepair checks the store of a data directory, whose service is
// stopped, and rebuilds what is damaged: a node's view of a cluster from
// the cluster's streams, a single serve's store from what of it can be
// read, the search index from the store. Damaged files are kept aside,
// never deleted.
func runRepair(ctx context.Context, e *env) error {
	var sf storeFlags
	fs := newFlagSet(e, "repair", "[--check] [--index]")
	sf.register(fs)
	only := fs.Bool("check", false, "only check: say what is damaged, change nothing (exit status 1 when something is)")
	index := fs.Bool("index", false, "rebuild the search index from the store even when the store is whole")
	args, err := e.parse(fs, e.args)
	if err != nil {
		return err
	}
	if len(args) != 0 {
		return usagef("repair takes no arguments")
	}
	dir := sf.data
	db := filepath.Join(dir, "pet.db")
	if _, err := os.Stat(db); err != nil {
		return fmt.Errorf("no store in %s: %w", dir, err)
	}
	found, err := pet.CheckFile(ctx, dir)
	if errors.Is(err, pet.ErrLocked) {
		return fmt.Errorf("the data directory %s is in use by another changedigest process: stop it first", dir)
	}
	if err != nil {
		return err
	}
	if len(found) == 0 {
		fmt.Fprintf(e.stdout, "%s is whole: every page, user, watch and version reads\n", db)
	} else {
		fmt.Fprintf(e.stdout, "%s is damaged:\n", db)
		for _, f := range found {
			fmt.Fprintf(e.stdout, "  %s\n", f)
		}
	}
	if *only {
		if len(found) > 0 {
			return errors.New("the store is damaged (run changedigest repair without --check to repair it)")
		}
		return nil
	}
	stamp := time.Now().UTC().Format("20060102T150405")
	aside := func(name string) error {
		from := filepath.Join(dir, name)
		if _, err := os.Stat(from); errors.Is(err, os.ErrNotExist) {
			return nil
		}
		to := from + ".damaged-" + stamp
		if err := os.Rename(from, to); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "kept %s aside as %s\n", name, filepath.Base(to))
		return nil
	}
	if len(found) > 0 {
		if cluster.IsView(dir) && !cluster.IsLocal(dir) {
			// A node of a cluster of several: the cluster's streams hold
			// every version and definition its view holds.
			if err := aside("pet.db"); err != nil {
				return err
			}
			if err := os.Remove(filepath.Join(dir, "positions.json")); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			fmt.Fprintln(e.stdout, "the node's view is rebuilt from the cluster's streams when serve next starts")
		} else if err := salvage(ctx, e, dir, stamp); err != nil {
			return err
		}
	}
	if len(found) > 0 || *index {
		if err := aside("index.bleve"); err != nil {
			return err
		}
		fmt.Fprintln(e.stdout, "the search index is rebuilt from the store when it is next opened")
	}
	return nil
}

// salvage rebuilds a single serve's store (the track of record) from
// what of it can be read, keeping the damaged file aside.
func salvage(ctx context.Context, e *env, dir, stamp string) error {
	db := filepath.Join(dir, "pet.db")
	fresh := db + ".salvage-" + stamp
	lost, err := pet.Salvage(db, fresh)
	if err != nil {
		os.Remove(fresh)
		return err
	}
	for _, l := range lost {
		fmt.Fprintf(e.stdout, "  lost: %s\n", l)
	}
	damaged := db + ".damaged-" + stamp
	if err := os.Rename(db, damaged); err != nil {
		return err
	}
	if err := os.Rename(fresh, db); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "kept pet.db aside as %s and copied into a new pet.db what of it reads\n", filepath.Base(damaged))
	s := pet.New(dir)
	s.CheckPages = true
	if err := s.Open(ctx); err != nil {
		return fmt.Errorf("open the new store: %w", err)
	}
	m, err := s.Mend(ctx)
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("mend the new store: %w", err)
	}
	for _, d := range m.Dropped {
		fmt.Fprintf(e.stdout, "  taken out: %s\n", d)
	}
	fmt.Fprintf(e.stdout, "the new store holds %d watches and %d versions, each of which reads\n", m.Watches, m.Versions)
	// The next serve imports the store into a new cluster of one.
	return cluster.StoreWritten(dir)
}
