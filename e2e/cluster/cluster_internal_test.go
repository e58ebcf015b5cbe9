package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestPrepareDirRefusesForeignDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := prepareDir(dir); err == nil {
		t.Fatal("prepareDir reused a directory that is not a cluster's")
	}
	if _, err := os.Stat(filepath.Join(dir, "notes.txt")); err != nil {
		t.Errorf("unrelated file was touched: %v", err)
	}
}

func TestPrepareDirRefusesRunningCluster(t *testing.T) {
	dir := t.TempDir()
	p := startSleep(t, t.TempDir())
	s := state{Version: stateVersion, Components: []componentState{{Name: Etcd, PID: p.PID(), Binary: p.Spec().Binary}}}
	if err := writeState(layout{dir}.state(), s); err != nil {
		t.Fatal(err)
	}
	if _, err := prepareDir(dir); !errors.Is(err, ErrAlreadyRunning) {
		t.Fatalf("prepareDir = %v, want ErrAlreadyRunning", err)
	}

	// Once the process is gone the directory is stale and gets reused.
	if err := p.Stop(0); err != nil {
		t.Fatal(err)
	}
	got, err := prepareDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(got); len(entries) != 0 {
		t.Errorf("stale directory not cleared: %v", entries)
	}
}

func TestLoadWithoutStateFails(t *testing.T) {
	if _, err := Load(t.TempDir()); !errors.Is(err, ErrNoCluster) {
		t.Fatalf("Load = %v, want ErrNoCluster", err)
	}
}
