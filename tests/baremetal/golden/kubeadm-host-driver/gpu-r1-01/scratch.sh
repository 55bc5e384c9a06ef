#!/usr/bin/env bash
# gpufleet scratch for the server named in `host` below: its NVMe `devices` as one RAID0 array, XFS labelled
# `label`, mounted at `mount_path` (the scratch tier's) and bind-mounted at `bind_path` where the local volume
# provisioner finds it. Both mounts go to /etc/fstab (nofail).
# Idempotent and careful: every step checks state first; a device or mount that holds something that is not
# gpufleet scratch stops the script instead of being overwritten.
# Rendered from components/baremetal/templates/scratch.sh.j2. Every value from the stack arrives quoted, in the
# assignments below; the script refers to them by name only.
set -euo pipefail

host=gpu-r1-01
mount_path=/scratch
bind_path=/mnt/gpufleet/nvme/gpufleet-scratch
label=gf-scratch
md_name=gpufleet-scratch
devices=(/dev/nvme1n1 /dev/nvme2n1)
device_count=2

die() {
  printf 'scratch %s: %s\n' "$host" "$1" >&2
  exit 1
}

mounted_label() { # label of the filesystem mounted at $1, empty if nothing is mounted there
  local from
  from="$(findmnt -n -o SOURCE --mountpoint "$1" 2>/dev/null || true)"
  [ -n "$from" ] || return 0
  blkid -p -o value -s LABEL -- "$from" 2>/dev/null || printf '%s' "?$from"
}

if mountpoint -q "$mount_path" && [ "$(mounted_label "$mount_path")" != "$label" ]; then
  die "$mount_path is already mounted from $(findmnt -n -o SOURCE --mountpoint "$mount_path"), not gpufleet scratch; refusing to touch it"
fi

fstab_line() { # fstab_line MOUNTPOINT LINE: add LINE unless MOUNTPOINT already has an entry
  if ! awk -v mp="$1" '$1 !~ /^#/ && $2 == mp { found = 1 } END { exit !found }' /etc/fstab; then
    printf '%s\n' "$2" >> /etc/fstab
  fi
}

target="/dev/md/$md_name"
if [ ! -e "$target" ]; then
  for dev in "${devices[@]}"; do
    [ -b "$dev" ] || die "$dev is not a block device"
    signature="$(blkid -p -o value -s TYPE -- "$dev" 2>/dev/null || true)"
    [ -z "$signature" ] || die "$dev holds a $signature signature; refusing to overwrite it (wipe it by hand if it is free)"
  done
  mdadm --create "$target" --run --level=0 --raid-devices="$device_count" --name="$md_name" "${devices[@]}"
fi
mdadm_conf=/etc/mdadm/mdadm.conf
if [ ! -d /etc/mdadm ]; then mdadm_conf=/etc/mdadm.conf; fi
if ! grep -qs -e "name=.*$md_name" -- "$mdadm_conf"; then
  mdadm --detail --brief "$target" >> "$mdadm_conf"
fi

fstype="$(blkid -p -o value -s TYPE -- "$target" 2>/dev/null || true)"
if [ -z "$fstype" ]; then
  mkfs.xfs -L "$label" "$target"
else
  current="$(blkid -p -o value -s LABEL -- "$target" 2>/dev/null || true)"
  [ "$fstype" = xfs ] && [ "$current" = "$label" ] || die "$target holds $fstype (label '${current}'), not gpufleet scratch; refusing to format it"
fi
uuid="$(blkid -p -o value -s UUID -- "$target")"

mkdir -p "$mount_path" "$bind_path"
fstab_line "$mount_path" "UUID=$uuid $mount_path xfs defaults,noatime,nofail 0 2"
fstab_line "$bind_path" "$mount_path $bind_path none bind,nofail 0 0"
if ! mountpoint -q "$mount_path"; then mount "$mount_path"; fi
[ "$(mounted_label "$mount_path")" = "$label" ] || die "$mount_path is not mounted from the gpufleet scratch filesystem (check /etc/fstab)"
if ! mountpoint -q "$bind_path"; then mount "$bind_path"; fi
printf 'scratch %s: %s mounted at %s (bind %s)\n' "$host" "$target" "$mount_path" "$bind_path"
