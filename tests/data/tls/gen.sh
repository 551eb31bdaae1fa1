#!/bin/sh
# Regenerates the test-only CA and leaf certificates in this folder (run from this folder).
# The CA key is not kept: rerunning replaces every file.
set -e
# CA
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
  -subj "/CN=mcpwire test CA (test only)" -keyout ca.key -out ca.pem \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
gen_leaf() { # file-stem common-name subject-alt-names
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=$2" -keyout "$1.key" -out "$1.csr"
  printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=%s\n' "$3" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 3650 -sha256 -extfile "$1.ext" -out "$1.pem"
  rm -f "$1.csr" "$1.ext"
}
gen_leaf server localhost "IP:127.0.0.1,DNS:localhost"
gen_leaf other other.invalid "DNS:other.invalid"
rm -f ca.srl ca.key
