package hostclock

import (
	"sync"
	"time"

	"github.com/protobench/protobench/internal/record"
)

// keep is how long a Sampler keeps its samples: longer than any run's window and the wait for
// its metrics.
const keep = 15 * time.Minute

// Sampler reads the current frequency of a set of CPUs every interval, for the hosts whose
// node-exporter lacks node_cpu_scaling_frequency_hertz; Window then gives a run's clock from
// the samples inside it.
type Sampler struct {
	root string
	cpus []int
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex
	samples []sample
}

type sample struct {
	at  time.Time
	cpu int
	mhz float64
}

// StartSampler starts sampling cpus every interval, or returns ErrNoCpufreq (or the read's
// error) when the first reading fails.
func StartSampler(root string, cpus []int, interval time.Duration) (*Sampler, error) {
	s := &Sampler{root: root, cpus: cpus, stop: make(chan struct{}), done: make(chan struct{})}
	if err := s.take(time.Now()); err != nil {
		return nil, err
	}
	go func() {
		defer close(s.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case now := <-t.C:
				_ = s.take(now)
			}
		}
	}()
	return s, nil
}

func (s *Sampler) take(now time.Time) error {
	var got []sample
	for _, c := range s.cpus {
		mhz, err := CurMHz(s.root, c)
		if err != nil {
			return err
		}
		got = append(got, sample{now, c, mhz})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples = append(s.samples, got...)
	cut := 0
	for cut < len(s.samples) && now.Sub(s.samples[cut].at) > keep {
		cut++
	}
	s.samples = s.samples[cut:]
	return nil
}

// Stop ends the sampling.
func (s *Sampler) Stop() {
	if s == nil {
		return
	}
	close(s.stop)
	<-s.done
}

// Window is the clock of cpus over [start, end] from the samples inside it; nil when none are.
func (s *Sampler) Window(cpus []int, start, end time.Time) *record.Frequency {
	if s == nil {
		return nil
	}
	want := map[int]bool{}
	for _, c := range cpus {
		want[c] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var mhz []float64
	for _, x := range s.samples {
		if want[x.cpu] && !x.at.Before(start) && !x.at.After(end) {
			mhz = append(mhz, x.mhz)
		}
	}
	return Summarize(mhz)
}
