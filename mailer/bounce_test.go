package mailer_test

import (
	"testing"

	"github.com/rundbrief/rundbrief/mailer"
)

func TestHardBounce(t *testing.T) {
	cases := []struct {
		name string
		err  *mailer.SendError
		want bool
	}{
		{"no such mailbox", &mailer.SendError{Stage: mailer.StageRcpt, Permanent: true, Code: 550, Enhanced: "5.1.1"}, true},
		{"bad domain at DATA", &mailer.SendError{Stage: mailer.StageData, Permanent: true, Code: 550, Enhanced: "5.1.2"}, true},
		{"mailbox disabled", &mailer.SendError{Stage: mailer.StageRcpt, Permanent: true, Code: 550, Enhanced: "5.2.1"}, true},
		{"550 without enhanced code", &mailer.SendError{Stage: mailer.StageRcpt, Permanent: true, Code: 550}, true},
		{"mailbox full", &mailer.SendError{Stage: mailer.StageRcpt, Permanent: true, Code: 552, Enhanced: "5.2.2"}, false},
		{"policy", &mailer.SendError{Stage: mailer.StageData, Permanent: true, Code: 554, Enhanced: "5.7.1"}, false},
		{"554 at DATA without code", &mailer.SendError{Stage: mailer.StageData, Permanent: true, Code: 554}, false},
		{"transient", &mailer.SendError{Stage: mailer.StageRcpt, Code: 451, Enhanced: "4.2.0"}, false},
		{"sender refused", &mailer.SendError{Stage: mailer.StageMail, Permanent: true, Code: 550, Enhanced: "5.1.8"}, false},
		{"nil", nil, false},
	}
	for _, c := range cases {
		if got := mailer.HardBounce(c.err); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
