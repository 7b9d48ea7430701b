// Package mailer renders and sends Rundbrief's emails.
package mailer
