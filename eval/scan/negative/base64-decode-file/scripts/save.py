import base64, json, sys
msg = json.load(sys.stdin)
for a in msg['attachments']:
    open(a['name'], 'wb').write(base64.b64decode(a['data']))
