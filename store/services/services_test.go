package services_test

import (
	"context"
	"io"
	"log/slog"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/rundbrief/rundbrief/mailer"
	"github.com/rundbrief/rundbrief/store/dbtest"
	"github.com/rundbrief/rundbrief/store/services"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// TestNewBuildsEverySurfaceDependency: the set serve hands to the API, the
// portal and the public pages has every service (none of their endpoints
// would answer 503), its workers have distinct names, and they all run and
// stop when their context ends.
func TestNewBuildsEverySurfaceDependency(t *testing.T) {
	url := dbtest.URL(t)
	db := dbtest.Open(t, url)
	set, err := services.New(db, services.Config{
		DatabaseURL: url, BaseURL: "http://rundbrief.test", Secret: "services test secret, long enough to key",
		Transport: mailer.TransportOptions{HELO: "rundbrief.test"}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	v := reflect.ValueOf(set).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if f.IsExported() && f.Type.Kind() == reflect.Pointer && v.Field(i).IsNil() {
			t.Errorf("Set.%s is nil", f.Name)
		}
	}

	workers := set.Workers()
	names := map[string]bool{}
	for _, w := range workers {
		if w.Name == "" || names[w.Name] || w.Run == nil {
			t.Errorf("worker %q: unnamed, named twice or without Run", w.Name)
		}
		names[w.Name] = true
	}
	for _, want := range []string{"webhooks", "campaign sender", "campaign scheduler", "a/b test winners", "contact import", "notifications",
		"appointment reminders"} {
		if !names[want] {
			t.Errorf("no worker %q among %v", want, names)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errs := make(chan error, len(workers))
	for _, w := range workers {
		wg.Go(func() { errs <- w.Run(ctx) })
	}
	time.Sleep(200 * time.Millisecond) // let each loop get going before it is stopped
	cancel()
	stopped := make(chan struct{})
	go func() { wg.Wait(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("workers still running 30 s after their context ended")
	}
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("worker stopped with %v", err)
		}
	}
}
