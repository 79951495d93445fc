#!/usr/bin/env bash
# Makes development certificates for a three-node Atoll cluster with TLS (docs/security.md, "TLS"):
#
#   scripts/dev-certs.sh [DIR]          (default ./certs)
#
# DIR/ca.pem               client CA: signs the nodes' client-port certificates and client.pem;
#                          clients trust it (`atoll --tls-ca`), nodes may require it (--tls-client-ca)
# DIR/nodeN.pem, -key.pem  node N's client-port certificate (--tls-cert, --tls-key)
# DIR/client.pem, -key.pem a client certificate (`atoll --tls-cert --tls-key`)
# DIR/peer-ca.pem          peer CA: signs only node certificates, since whatever it signs may speak
#                          Raft to the nodes (--peer-ca)
# DIR/nodeN-peer.pem, -key.pem  node N's peer certificate (--peer-cert, --peer-key)
#
# Every node certificate names nodeN, localhost and 127.0.0.1 (the compose services are node1,
# node2 and node3); add names with DEV_CERTS_EXTRA_SANS="DNS:atoll.example,IP:10.0.0.5".
# Node certificates serve both TLS roles (serverAuth, clientAuth): a node's peer certificate is also
# what it presents when it dials a peer, and the CLI in a node's container presents the node's
# client-port certificate when the node requires client certificates.
#
# Safe to run twice: existing files are kept (a new CA would invalidate every certificate signed
# by the old one); delete DIR to start over. Keys are written mode 0600. Nothing here is fit for
# production: the CA keys sit next to the certificates, unencrypted.
set -euo pipefail

readonly dir="${1:-./certs}"
readonly nodes=3
readonly days=825
readonly extra_sans="${DEV_CERTS_EXTRA_SANS:-}"

log() { echo "dev-certs: $*"; }
fail() {
  echo "dev-certs: error: $*" >&2
  exit 1
}

command -v openssl >/dev/null 2>&1 || fail "openssl is not installed"
mkdir -p "$dir"
umask 077

# make_ca NAME COMMON_NAME: NAME.pem and NAME-key.pem, unless NAME.pem exists.
make_ca() {
  local name="$1" common_name="$2"
  if [ -s "$dir/$name.pem" ] && [ -s "$dir/$name-key.pem" ]; then
    log "keeping $dir/$name.pem"
    return
  fi
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -sha256 -days "$days" -subj "/CN=$common_name" \
    -keyout "$dir/$name-key.pem" -out "$dir/$name.pem" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
  chmod 0644 "$dir/$name.pem"
  log "made $dir/$name.pem"
}

# make_cert NAME COMMON_NAME CA USAGES SANS: NAME.pem and NAME-key.pem signed by CA, unless present.
make_cert() {
  local name="$1" common_name="$2" ca="$3" usages="$4" sans="$5"
  if [ -s "$dir/$name.pem" ] && [ -s "$dir/$name-key.pem" ]; then
    log "keeping $dir/$name.pem"
    return
  fi
  local extensions="$dir/$name.ext"
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature"
    echo "extendedKeyUsage=$usages"
    [ -n "$sans" ] && echo "subjectAltName=$sans"
  } >"$extensions"
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=$common_name" \
    -keyout "$dir/$name-key.pem" -out "$dir/$name.csr" 2>/dev/null
  openssl x509 -req -sha256 -days "$days" -in "$dir/$name.csr" \
    -CA "$dir/$ca.pem" -CAkey "$dir/$ca-key.pem" -CAcreateserial -CAserial "$dir/$ca.srl" \
    -extfile "$extensions" -out "$dir/$name.pem" 2>/dev/null ||
    { rm -f "$dir/$name-key.pem" "$dir/$name.pem"; fail "signing $name failed"; }
  rm -f "$extensions" "$dir/$name.csr"
  chmod 0644 "$dir/$name.pem"
  log "made $dir/$name.pem"
}

make_ca ca "Atoll dev client CA"
make_ca peer-ca "Atoll dev peer CA"
for id in $(seq 1 "$nodes"); do
  sans="DNS:node$id,DNS:localhost,IP:127.0.0.1${extra_sans:+,$extra_sans}"
  make_cert "node$id" "node$id" ca "serverAuth,clientAuth" "$sans"
  make_cert "node$id-peer" "node$id" peer-ca "serverAuth,clientAuth" "$sans"
done
make_cert client "atoll-client" ca "clientAuth" ""
log "certificates are in $dir"
