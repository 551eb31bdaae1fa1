#!/bin/sh
# Regenerates the test-only client CA and client certificate for the mutual-TLS tests (run from
# this folder). Separate from gen.sh so the server CA stays as it is; the client CA's key is not
# kept either: rerunning replaces these three files.
set -e
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
  -subj "/CN=mcpwire test client CA (test only)" -keyout client-ca.key -out client-ca.pem \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=mcpwire test client" \
  -keyout client.key -out client.csr
printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n' > client.ext
openssl x509 -req -in client.csr -CA client-ca.pem -CAkey client-ca.key -CAcreateserial -days 3650 \
  -sha256 -extfile client.ext -out client.pem
rm -f client.csr client.ext client-ca.srl client-ca.key
