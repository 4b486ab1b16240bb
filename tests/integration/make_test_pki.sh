#!/usr/bin/env bash
# Makes a throwaway PKI in DIR for the TLS tests, valid for two days:
#   ca.pem             the CA that signs the server and client certificates
#   server.pem/.key    for 127.0.0.1 and localhost
#   client.pem/.key    a client certificate signed by ca.pem
#   stranger.pem/.key  a client certificate signed by another CA (other-ca.pem)
# EC P-256 keys: generated in milliseconds, so nothing secret is committed.
#
#   make_test_pki.sh DIR
set -euo pipefail

dir=${1:?usage: make_test_pki.sh DIR}
cd "$dir"

key() {
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null
}

# ca NAME: a self-signed CA certificate NAME.pem with its key NAME.key.
ca() {
  key "$1.key"
  openssl req -x509 -new -key "$1.key" -subj "/CN=perfcast test $1" -days 2 -out "$1.pem" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
}

# leaf NAME CA SUBJECT_ALT_NAMES EXTENDED_KEY_USAGE
leaf() {
  key "$1.key"
  openssl req -new -key "$1.key" -subj "/CN=$1" -out "$1.csr"
  printf 'subjectAltName=%s\nextendedKeyUsage=%s\nbasicConstraints=CA:FALSE\n' "$3" "$4" \
    > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial -days 2 \
    -extfile "$1.ext" -out "$1.pem" 2>/dev/null
}

ca ca
ca other-ca
leaf server ca "DNS:localhost,IP:127.0.0.1" serverAuth
leaf client ca "DNS:perfcast-test-client" clientAuth
leaf stranger other-ca "DNS:perfcast-test-stranger" clientAuth
