// Command rundbrief is the whole Rundbrief service: the HTTP server with its
// background workers, migrations, and the operator's account and key commands.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	_ "time/tzdata" // Europe/Berlin on machines without zoneinfo

	"github.com/rundbrief/rundbrief/store"
)

const usage = `Rundbrief: self-hosted email marketing and CRM.

Usage:
  rundbrief serve
  rundbrief migrate
  rundbrief account create --name N --email E [--password P] [--plan free|starter|pro|business] [--json]
  rundbrief account set-plan ID PLAN
  rundbrief account credit ID AMOUNT [--json]    (tops up the AI credit by AMOUNT euros, e.g. 25 or 12.50)
  rundbrief key create --account ID [--name N] [--scopes read,write,send,ai] [--ips CIDR,…] [--origins O,…] [--rate-limit N] [--json]
  rundbrief key renew ID [--json]
  rundbrief key revoke ID

Configuration comes from the environment (DATABASE_URL, RUNDBRIEF_*); see README.md.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, log); err != nil {
		fmt.Fprintln(os.Stderr, "rundbrief:", err)
		var uerr usageError
		if errors.As(err, &uerr) {
			fmt.Fprint(os.Stderr, "\n"+usage)
			os.Exit(2)
		}
		os.Exit(1)
	}
}

type usageError string

func (e usageError) Error() string { return string(e) }

// run dispatches a command line; it is main without the process around it.
func run(ctx context.Context, args []string, getenv func(string) string, out io.Writer, log *slog.Logger) error {
	if len(args) == 0 {
		return usageError("no command given")
	}
	cfg, err := loadConfig(getenv)
	if err != nil {
		return err
	}
	cmd, rest := args[0], args[1:]
	if cmd == "help" || cmd == "-h" || cmd == "--help" {
		_, _ = fmt.Fprint(out, usage)
		return nil
	}
	if cmd == "serve" {
		return serve(ctx, cfg, log)
	}
	sub := ""
	if cmd == "account" || cmd == "key" {
		if len(rest) == 0 {
			return usageError(cmd + ": missing subcommand")
		}
		sub, rest = rest[0], rest[1:]
	}
	handler, ok := map[string]func(context.Context, *store.DB, []string, io.Writer) error{
		"migrate":          func(context.Context, *store.DB, []string, io.Writer) error { return nil },
		"account create":   accountCreate,
		"account set-plan": accountSetPlan,
		"account credit":   accountCredit,
		"key create":       keyCreate,
		"key renew":        keyRenew,
		"key revoke":       keyRevoke,
	}[strings.TrimSpace(cmd+" "+sub)]
	if !ok {
		return usageError(fmt.Sprintf("unknown command %q", strings.TrimSpace(cmd+" "+sub)))
	}
	db, err := openDatabase(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.close()
	return handler(ctx, db.DB, rest, out)
}

func accountCreate(ctx context.Context, db *store.DB, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("account create", flag.ContinueOnError)
	name := fs.String("name", "", "account name")
	email := fs.String("email", "", "owner's sign-in email")
	password := fs.String("password", "", "owner's password (generated when empty)")
	plan := fs.String("plan", store.DefaultPlan, "free, starter, pro or business")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	res, err := db.CreateAccount(ctx, store.NewAccount{Name: *name, Email: *email, Password: *password, Plan: *plan})
	if err != nil {
		return describe(err)
	}
	if *asJSON {
		v := map[string]any{"id": res.Account.ID, "name": res.Account.Name, "plan": res.Account.Plan,
			"user_id": res.Owner.ID, "email": res.Owner.Email}
		if res.Password != "" {
			v["password"] = res.Password
		}
		return json.NewEncoder(out).Encode(v)
	}
	_, _ = fmt.Fprintf(out, "Account %d %q created (plan %s); owner %s\n", res.Account.ID, res.Account.Name, res.Account.Plan, res.Owner.Email)
	if res.Password != "" {
		_, _ = fmt.Fprintf(out, "Generated password: %s\n", res.Password)
	}
	return nil
}

func accountSetPlan(ctx context.Context, db *store.DB, args []string, out io.Writer) error {
	if len(args) != 2 {
		return usageError("account set-plan: expected ID PLAN")
	}
	id, err := strconv.ParseInt(args[0], 10, 64)
	if err != nil {
		return usageError("account set-plan: ID must be an integer")
	}
	if err := db.SetPlan(ctx, id, args[1]); err != nil {
		return describe(err)
	}
	_, _ = fmt.Fprintf(out, "Account %d is now on plan %s\n", id, args[1])
	return nil
}

// accountCredit tops up an account's AI credit and prints the new balance.
func accountCredit(ctx context.Context, db *store.DB, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("account credit", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	var pos, flags []string
	for _, a := range args {
		if strings.HasPrefix(a, "--") {
			flags = append(flags, a)
		} else {
			pos = append(pos, a)
		}
	}
	if err := parseFlags(fs, flags); err != nil {
		return err
	}
	if len(pos) != 2 {
		return usageError("account credit: expected ID AMOUNT (AMOUNT in euros, e.g. 25 or 12.50)")
	}
	id, err := strconv.ParseInt(pos[0], 10, 64)
	if err != nil {
		return usageError("account credit: ID must be an integer")
	}
	amount, err := store.ParseMoney(pos[1])
	if err != nil {
		return usageError("account credit: AMOUNT must be a positive amount in euros with at most four decimals, e.g. 25 or 12.50")
	}
	balance, err := db.AITopUp(ctx, id, amount)
	if err != nil {
		return describe(err)
	}
	if *asJSON {
		return json.NewEncoder(out).Encode(map[string]any{"account_id": id, "amount_eur": amount.Float(), "balance_eur": balance.Float()})
	}
	_, _ = fmt.Fprintf(out, "Account %d: AI credit topped up by %s EUR; balance %s EUR\n", id, amount, balance)
	return nil
}

type keyJSON struct {
	ID             int64    `json:"id"`
	AccountID      int64    `json:"account_id"`
	Key            string   `json:"key"`
	Name           string   `json:"name"`
	Prefix         string   `json:"prefix"`
	Scopes         []string `json:"scopes"`
	AllowedIPs     []string `json:"allowed_ips"`
	AllowedOrigins []string `json:"allowed_origins"`
	RateLimit      *int     `json:"rate_limit"`
}

func printKey(out io.Writer, asJSON bool, k store.APIKey, full string) error {
	if asJSON {
		return json.NewEncoder(out).Encode(keyJSON{ID: k.ID, AccountID: k.AccountID, Key: full, Name: k.Name, Prefix: k.Prefix,
			Scopes: k.Scopes, AllowedIPs: k.AllowedIPs, AllowedOrigins: k.AllowedOrigins, RateLimit: k.RateLimit})
	}
	_, _ = fmt.Fprintf(out, "Key %d (account %d, scopes %s):\n%s\nStore it now: it is not shown again.\n", k.ID, k.AccountID, strings.Join(k.Scopes, ","), full)
	return nil
}

func keyCreate(ctx context.Context, db *store.DB, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("key create", flag.ContinueOnError)
	account := fs.Int64("account", 0, "account id")
	name := fs.String("name", "", "key name")
	scopes := fs.String("scopes", "*", "comma-separated: read,write,send,ai or *")
	ips := fs.String("ips", "", "comma-separated allowed IPs or CIDR ranges")
	origins := fs.String("origins", "", "comma-separated allowed origins (https://*.example.com allowed)")
	rate := fs.Int("rate-limit", 0, "own requests per minute (lower than the default)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *account == 0 {
		return usageError("key create: --account is required")
	}
	s := store.KeySettings{Name: *name, Scopes: split(*scopes), AllowedIPs: split(*ips), AllowedOrigins: split(*origins)}
	if *rate != 0 {
		s.RateLimit = rate
	}
	k, full, err := db.CreateKey(ctx, *account, s)
	if err != nil {
		return describe(err)
	}
	return printKey(out, *asJSON, k, full)
}

func keyRenew(ctx context.Context, db *store.DB, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("key renew", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	id, err := idArg(fs, args)
	if err != nil {
		return err
	}
	acct, err := db.KeyAccount(ctx, id)
	if err != nil {
		return describe(err)
	}
	k, full, err := db.RenewKey(ctx, acct, id)
	if err != nil {
		return describe(err)
	}
	return printKey(out, *asJSON, k, full)
}

func keyRevoke(ctx context.Context, db *store.DB, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("key revoke", flag.ContinueOnError)
	id, err := idArg(fs, args)
	if err != nil {
		return err
	}
	acct, err := db.KeyAccount(ctx, id)
	if err != nil {
		return describe(err)
	}
	if err := db.RevokeKey(ctx, acct, id); err != nil {
		return describe(err)
	}
	_, _ = fmt.Fprintf(out, "Key %d revoked\n", id)
	return nil
}

// idArg reads a command's one positional ID, with flags before or after it.
func idArg(fs *flag.FlagSet, args []string) (int64, error) {
	var pos []string
	var flags []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			flags = append(flags, a)
		} else {
			pos = append(pos, a)
		}
	}
	if err := parseFlags(fs, flags); err != nil {
		return 0, err
	}
	if len(pos) != 1 {
		return 0, usageError(fs.Name() + ": expected one ID")
	}
	id, err := strconv.ParseInt(pos[0], 10, 64)
	if err != nil {
		return 0, usageError(fs.Name() + ": ID must be an integer")
	}
	return id, nil
}

func parseFlags(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		return usageError(fs.Name() + ": " + err.Error())
	}
	if fs.NArg() > 0 {
		return usageError(fmt.Sprintf("%s: unexpected argument %q", fs.Name(), fs.Arg(0)))
	}
	return nil
}

func split(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// describe turns domain errors into operator-readable messages.
func describe(err error) error {
	var ve *store.ValidationError
	var le *store.LimitError
	switch {
	case errors.As(err, &ve):
		var parts []string
		for f, m := range ve.Fields {
			parts = append(parts, f+": "+m)
		}
		return errors.New(strings.Join(parts, "; "))
	case errors.As(err, &le):
		return fmt.Errorf("plan limit reached: %s (max %d)", le.Limit, le.Max)
	case errors.Is(err, store.ErrNotFound):
		return errors.New("not found")
	}
	return err
}
