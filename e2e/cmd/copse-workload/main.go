// Command copse-workload is the program of the images the test cluster's
// real nodes run (e2e/cluster/images.go): a stand-in for a training process
// that does, in this order, what its flags ask: print its environment (the
// rank variables first), print files, wait for a file (a barrier), sleep,
// and exit with a given code. On SIGTERM it says so and lingers for
// --linger-on-term before exiting, so that a spec can watch the kubelet's
// termination grace. "copse-workload pause" is the pod sandbox's program:
// it sleeps until it is stopped and reaps the orphans of its PID namespace.
//
// It is a static Go binary, so its images need nothing else; it must not
// depend on copse's packages, which would make every image rebuild with them.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

// rankVariables are the environment variables of a distributed training
// process, printed first by --print-env: the torchrun/Kubeflow ones and
// copse's own.
var rankVariables = []string{
	"RANK", "LOCAL_RANK", "WORLD_SIZE", "NODE_RANK", "MASTER_ADDR", "MASTER_PORT",
	"PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT",
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "pause" {
		pause()
		return
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type fileList []string

func (f *fileList) String() string     { return strings.Join(*f, ",") }
func (f *fileList) Set(v string) error { *f = append(*f, v); return nil }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("copse-workload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	printEnv := fs.Bool("print-env", false, "print the rank variables, then every other environment variable")
	var reads fileList
	fs.Var(&reads, "read", "print this file (repeatable)")
	waitFile := fs.String("wait-for", "", "wait until this file exists and is not empty (a barrier)")
	waitContent := fs.String("wait-content", "", "with --wait-for: wait until the file's trimmed content is this")
	sleep := fs.Duration("sleep", 0, "sleep this long before exiting")
	exitCode := fs.Int("exit", 0, "exit with this code")
	linger := fs.Duration("linger-on-term", 0, "on SIGTERM, print that it came and exit 143 after this long")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	terms := make(chan os.Signal, 1)
	signal.Notify(terms, syscall.SIGTERM)
	go func() {
		<-terms
		fmt.Fprintf(stdout, "received SIGTERM; exiting in %s\n", *linger)
		time.Sleep(*linger)
		os.Exit(143)
	}()
	if *printEnv {
		printEnvironment(stdout)
	}
	for _, file := range reads {
		data, err := os.ReadFile(file)
		if err != nil {
			fmt.Fprintf(stderr, "read %s: %v\n", file, err)
			return 1
		}
		fmt.Fprintf(stdout, "%s: %s\n", file, strings.TrimSpace(string(data)))
	}
	if *waitFile != "" {
		waitFor(*waitFile, *waitContent, stdout)
	}
	if *sleep > 0 {
		time.Sleep(*sleep)
	}
	fmt.Fprintf(stdout, "exiting with code %d\n", *exitCode)
	return *exitCode
}

func printEnvironment(w io.Writer) {
	for _, name := range rankVariables {
		if v, ok := os.LookupEnv(name); ok {
			fmt.Fprintf(w, "rank %s=%s\n", name, v)
		}
	}
	env := os.Environ()
	slices.Sort(env)
	for _, kv := range env {
		fmt.Fprintf(w, "env %s\n", kv)
	}
}

// waitFor polls, as a process on a real node would, because the kubelet
// rewrites projected and downward-API files by swapping a symlink, which
// inotify on the file itself does not see.
func waitFor(file, content string, w io.Writer) {
	fmt.Fprintf(w, "waiting for %s\n", file)
	for {
		data, err := os.ReadFile(file)
		got := strings.TrimSpace(string(data))
		if err == nil && got != "" && (content == "" || got == content) {
			fmt.Fprintf(w, "%s: %s\n", file, got)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// pause is the sandbox's process: PID 1 of the pod, which holds its
// namespaces and reaps any process reparented to it.
func pause() {
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			return
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || errors.Is(err, syscall.ECHILD) {
				break
			}
		}
	}
}
