package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"runtime"
	"time"

	"github.com/forgedaemon/forged/internal/cpuprobe"
)

// spinArg re-executes this binary as the load process. It is not a flag,
// so it stays out of the usage.
const spinArg = "-internal-spin-load"

// loader is a running load process.
type loader struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	start time.Time
}

// loadStats add up what the load processes did.
type loadStats struct {
	cpu, wall time.Duration
}

// startLoader starts the load process and waits until it spins.
func startLoader() (*loader, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("load process: %w", err)
	}
	cmd := exec.Command(exe, spinArg)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("load process: %w", err)
	}
	l := &loader{cmd: cmd, stdin: stdin}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		l.stop(&loadStats{})
		return nil, fmt.Errorf("load process did not start: %q, %v", line, err)
	}
	l.start = time.Now()
	return l, nil
}

// stop ends the load process (closing its stdin, which it watches, then
// killing it should it still run) and adds its CPU and wall time to st.
func (l *loader) stop(st *loadStats) error {
	l.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- l.cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(5 * time.Second):
		l.cmd.Process.Kill()
		err = <-done
	}
	if l.cmd.ProcessState != nil {
		st.cpu += l.cmd.ProcessState.UserTime() + l.cmd.ProcessState.SystemTime()
	}
	if !l.start.IsZero() {
		st.wall += time.Since(l.start)
	}
	if err != nil {
		return fmt.Errorf("load process: %w", err)
	}
	return nil
}

// spin is the load process: one thread alternating FMA bursts and a
// streaming read of a buffer twice the size of a common LLC, until its
// stdin closes (the parent stopped it or died).
func spin() {
	runtime.GOMAXPROCS(1)
	go func() {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	buf := cpuprobe.NewBuffers(1, 64<<20)
	fmt.Println("ready")
	var sink uint64
	var acc float64
	for {
		if cpuprobe.HaveFMA() {
			cpuprobe.FMABurst(1 << 20)
		} else {
			acc += fmaLoop(1 << 21)
		}
		sink += buf.Sum(0)
		if sink == 1 && acc == 1 { // never; keeps both live
			fmt.Println(sink, acc)
		}
	}
}

// fmaLoop is floating-point work where the AVX-512 burst is not available:
// eight independent FMA chains, n rounds.
func fmaLoop(n int) float64 {
	var a [8]float64
	for i := range a {
		a[i] = float64(i)
	}
	for range n {
		for i := range a {
			a[i] = math.FMA(a[i], 0.999999, 1e-9)
		}
	}
	return a[0] + a[7]
}
