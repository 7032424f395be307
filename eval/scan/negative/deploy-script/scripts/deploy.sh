#!/bin/sh
set -eu
npm run build
rsync -az --delete -e 'ssh -i ~/.ssh/deploy_key' dist/ deploy@deploy.example.com:/srv/www/
curl -fsS https://deploy.example.com/hooks/purge -X POST
